// Package lx is a thin cgo layer over the system libxml2: strict and recovering
// parses, exclusive C14N of a document or a subtree, XML Schema compilation from
// memory with every external load denied, and validation that returns the complete
// error list. It exists because lestrrat-go/libxml2's XSD wrapper crashes on long
// error messages, caps and drops errors and leaks (see go-deps.md §2.1).
//
// Ownership rules: a *Doc is owned by exactly one goroutine at a time and freed
// exactly once with Free; Nodes are only valid while their Doc lives. A compiled
// *Schema is immutable and safe for concurrent use.
package lx

/*
#cgo pkg-config: libxml-2.0
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

var initOnce sync.Once

func init() { Init() }

// Init initialises libxml2 once (parser, schema types, the deny-all entity loader
// and silenced default error output). It is called by the package's init and is
// safe to call again.
func Init() {
	initOnce.Do(func() { C.lx_init() })
}

// MaxErrors bounds how many diagnostics one call collects; the rest are counted.
const MaxErrors = 1000

// Level is the severity of a diagnostic, as libxml2 reports it.
type Level int

// Severity levels.
const (
	LevelWarning Level = 1
	LevelError   Level = 2
	LevelFatal   Level = 3
)

// Error is one diagnostic from libxml2.
type Error struct {
	Level  Level
	Domain int
	Code   int
	Line   int
	Col    int
	// Path is the XPath of the offending node (validation errors only).
	Path string
	Msg  string
}

// String renders the diagnostic as "line:col path: message".
func (e Error) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:%d", e.Line, e.Col)
	if e.Path != "" {
		b.WriteString(" ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is the complete diagnostic list of one call.
type Errors struct {
	List []Error
	// Dropped counts diagnostics beyond MaxErrors.
	Dropped int
}

// Error implements error: the first diagnostics joined by "; ".
func (e *Errors) Error() string {
	if e == nil || len(e.List) == 0 {
		return "libxml2: unspecified error"
	}
	parts := make([]string, 0, 3)
	for i, it := range e.List {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("… %d more", len(e.List)-3+e.Dropped))
			break
		}
		parts = append(parts, it.String())
	}
	return strings.Join(parts, "; ")
}

// Severe reports whether any diagnostic is an error or fatal error.
func (e *Errors) Severe() bool {
	if e == nil {
		return false
	}
	for _, it := range e.List {
		if it.Level >= LevelError {
			return true
		}
	}
	return false
}

// errs is a C-side diagnostic list owned by one call.
type errs struct{ c C.lx_errs }

var errsPool = sync.Pool{New: func() any { return &errs{} }}

// newErrs returns an empty diagnostic list from a pool (one per cgo call);
// take returns it.
func newErrs() *errs {
	e := errsPool.Get().(*errs)
	e.c = C.lx_errs{max: C.int(MaxErrors)}
	return e
}

// take converts and frees the collected diagnostics (nil when there were none)
// and returns the list to the pool.
func (e *errs) take() *Errors {
	defer errsPool.Put(e)
	n := int(e.c.n)
	if n == 0 && e.c.dropped == 0 {
		return nil
	}
	out := &Errors{List: make([]Error, 0, n), Dropped: int(e.c.dropped)}
	items := unsafe.Slice(e.c.items, n)
	for _, it := range items {
		er := Error{
			Level:  Level(it.level),
			Domain: int(it.domain),
			Code:   int(it.code),
			Line:   int(it.line),
			Col:    int(it.col),
			Msg:    C.GoString(it.msg),
		}
		if it.path != nil {
			er.Path = C.GoString(it.path)
		}
		out.List = append(out.List, er)
	}
	C.lx_errs_free(&e.c)
	return out
}

// cbytes returns a C view of b valid for the duration of one cgo call. libxml2
// copies input buffers, so no reference outlives the call.
func cbytes(b []byte) (*C.char, C.int) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(&b[0])), C.int(len(b))
}
