package config

import (
	"fmt"
	"strings"
)

// Position is a place in a configuration file.
type Position struct {
	// File is the name the file was loaded under.
	File string
	// Line and Col are 1-based; 0 means unknown.
	Line, Col int
}

// String formats the position as "file:line", or just "file" when the line
// is unknown.
func (p Position) String() string {
	switch {
	case p.Line > 0 && p.File != "":
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	case p.Line > 0:
		return fmt.Sprintf("line %d", p.Line)
	default:
		return p.File
	}
}

// Pos returns where the value at path was written, e.g.
// Pos("listeners[1].payload_class"). A key that was not written (its value is
// a default) reports the position of its nearest written ancestor, so a check
// made after loading can still point at the right part of the file. Paths use
// the yaml key names, "." between keys and "[i]" for list items.
func (o *Organism) Pos(path string) Position {
	for {
		if p, ok := o.positions[path]; ok {
			return p
		}
		if path == "" {
			return Position{File: o.file}
		}
		path = parentPath(path)
	}
}

// Errorf returns a located configuration error (wrapping ErrConfig) about
// the value at path, for checks made after loading, such as root-tag
// collisions found when the pump registers listeners.
func (o *Organism) Errorf(path, format string, args ...any) error {
	return &Error{Pos: o.Pos(path), Path: path, Msg: fmt.Sprintf(format, args...)}
}

// parentPath strips the last key or index from a path:
// "listeners[1].name" → "listeners[1]" → "listeners" → "".
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// childKey is the path of key inside the mapping at path.
func childKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// childIndex is the path of item i inside the list at path.
func childIndex(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
