package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// Entry is one registered listener whose generated files live in the tree.
type Entry struct {
	// Listener is the listener name, used as the directory name (dots allowed).
	Listener string
	// Description is the listener description, used in prompt.md.
	Description string
	// Type is the payload struct type (or a pointer to it).
	Type reflect.Type
}

// The files written for each listener, relative to dir/<listener>/.
const (
	SchemaFile  = "v1.xsd"
	ExampleFile = "example.xml"
	PromptFile  = "prompt.md"
)

// treeFile is one generated file: its path and expected content.
type treeFile struct {
	path    string
	content []byte
}

// WriteTree writes dir/<listener>/v1.xsd, example.xml and prompt.md (the
// PromptSection, with a final newline) for every entry, creating directories as
// needed and leaving files whose content is already right untouched.
func WriteTree(dir string, entries []Entry) error {
	files, err := treeFiles(dir, entries)
	if err != nil {
		return err
	}
	for _, f := range files {
		if old, err := os.ReadFile(f.path); err == nil && bytes.Equal(old, f.content) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return fmt.Errorf("gen: write tree: %w", err)
		}
		if err := os.WriteFile(f.path, f.content, 0o644); err != nil {
			return fmt.Errorf("gen: write tree: %w", err)
		}
	}
	return nil
}

// CheckTree compares the files WriteTree would write with those on disk and
// returns an error wrapping ErrStale that lists every file that is missing or
// differs. Files in dir that belong to no entry are not examined.
func CheckTree(dir string, entries []Entry) error {
	files, err := treeFiles(dir, entries)
	if err != nil {
		return err
	}
	var problems []string
	for _, f := range files {
		old, err := os.ReadFile(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, f.path+" is missing")
		case err != nil:
			return fmt.Errorf("gen: check tree: %w", err)
		case !bytes.Equal(old, f.content):
			problems = append(problems, f.path+" differs")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("gen: %w: %s", ErrStale, strings.Join(problems, "; "))
	}
	return nil
}

// treeFiles computes every generated file of entries under dir.
func treeFiles(dir string, entries []Entry) ([]treeFile, error) {
	seen := map[string]bool{}
	var files []treeFile
	for _, e := range entries {
		if err := checkListenerName(e.Listener); err != nil {
			return nil, err
		}
		if seen[e.Listener] {
			return nil, fmt.Errorf("gen: listener %q: %w: listed twice", e.Listener, ErrInvalidListener)
		}
		seen[e.Listener] = true
		t, err := Describe(e.Type)
		if err != nil {
			return nil, fmt.Errorf("gen: listener %q: %w", e.Listener, err)
		}
		sub := filepath.Join(dir, e.Listener)
		prompt := PromptSection(Peer{Name: e.Listener, Description: e.Description, Type: t}) + "\n"
		files = append(files,
			treeFile{filepath.Join(sub, SchemaFile), XSD(t)},
			treeFile{filepath.Join(sub, ExampleFile), Example(t)},
			treeFile{filepath.Join(sub, PromptFile), []byte(prompt)},
		)
	}
	return files, nil
}

// checkListenerName rejects names that are not a single safe directory name.
func checkListenerName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("gen: %w: empty", ErrInvalidListener)
	case strings.ContainsAny(name, `/\`+"\x00"):
		return fmt.Errorf("gen: %w %q: contains a path separator", ErrInvalidListener, name)
	case strings.Contains(name, "..") || name == ".":
		return fmt.Errorf("gen: %w %q: contains a relative path element", ErrInvalidListener, name)
	}
	return nil
}
