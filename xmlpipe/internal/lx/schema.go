package lx

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// RegisterResource makes data loadable under url (e.g. "mem:/schemas/core.xsd")
// for schema includes and imports. Every URL that was not registered is denied.
func RegisterResource(url string, data []byte) error {
	cu := C.CString(url)
	defer C.free(unsafe.Pointer(cu))
	buf, n := cbytes(data)
	if C.lx_register_resource(cu, buf, n) != 0 {
		return &Errors{List: []Error{{Level: LevelFatal, Msg: "out of memory registering " + url}}}
	}
	return nil
}

// Schema is a compiled XML Schema. It is immutable and safe for concurrent use.
type Schema struct {
	p   *C.xmlSchema
	doc *C.xmlDoc
}

// CompileSchema compiles the schema text xsd. url is its base URI (relative
// includes resolve against it; only registered resources load). Every compile
// diagnostic is returned.
func CompileSchema(xsd []byte, url string) (*Schema, *Errors) {
	if len(xsd) == 0 {
		return nil, &Errors{List: []Error{{Level: LevelFatal, Msg: ErrEmpty.Error()}}}
	}
	es := newErrs()
	var cu *C.char
	if url != "" {
		cu = C.CString(url)
		defer C.free(unsafe.Pointer(cu))
	}
	buf, n := cbytes(xsd)
	var doc C.xmlDocPtr
	p := C.lx_schema_compile(buf, n, cu, &doc, &es.c)
	e := es.take()
	if p == nil {
		if e == nil {
			e = &Errors{List: []Error{{Level: LevelFatal, Msg: "schema could not be compiled"}}}
		}
		return nil, e
	}
	s := &Schema{p: p, doc: doc}
	runtime.SetFinalizer(s, (*Schema).Free)
	return s, nil
}

// Free releases the schema. Schemas are normally kept for the process lifetime;
// a finalizer frees unreachable ones.
func (s *Schema) Free() {
	if s == nil || s.p == nil {
		return
	}
	C.xmlSchemaFree(s.p)
	if s.doc != nil {
		C.xmlFreeDoc(s.doc)
	}
	s.p, s.doc = nil, nil
	runtime.SetFinalizer(s, nil)
}

// Validate validates the whole document and returns every diagnostic (nil if valid).
func (s *Schema) Validate(d *Doc) *Errors {
	es := newErrs()
	rc := C.lx_validate_doc(s.p, d.p, &es.c)
	runtime.KeepAlive(s)
	return validationResult(rc, es.take())
}

// ValidateElement validates the subtree rooted at element n as if it were a
// document element, returning every diagnostic (nil if valid).
func (s *Schema) ValidateElement(n Node) *Errors {
	es := newErrs()
	rc := C.lx_validate_elem(s.p, n.p, &es.c)
	runtime.KeepAlive(s)
	return validationResult(rc, es.take())
}

// validationResult turns libxml2's return code and diagnostics into the
// result: nil when valid (warnings alone do not fail), the list otherwise.
func validationResult(rc C.int, e *Errors) *Errors {
	if rc != 0 && e == nil {
		e = &Errors{List: []Error{{Level: LevelError, Msg: "validation failed"}}}
	}
	if rc == 0 && e != nil && !e.Severe() {
		return nil
	}
	return e
}
