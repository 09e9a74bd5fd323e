package lx

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Options are libxml2 parser options.
type Options int

// Parser options (libxml2's XML_PARSE_* values).
const (
	OptRecover  Options = C.XML_PARSE_RECOVER
	OptNoEnt    Options = C.XML_PARSE_NOENT // never use on untrusted input
	OptNoBlanks Options = C.XML_PARSE_NOBLANKS
	OptNoNet    Options = C.XML_PARSE_NONET
	OptNoCDATA  Options = C.XML_PARSE_NOCDATA
	OptNoError  Options = C.XML_PARSE_NOERROR
	OptNoWarn   Options = C.XML_PARSE_NOWARNING
	OptCompact  Options = C.XML_PARSE_COMPACT
)

// ErrEmpty is returned for a zero-length input (libxml2 cannot parse one).
var ErrEmpty = errors.New("lx: empty input")

// ErrTooLarge is returned for inputs over 2 GiB (libxml2 takes an int length).
var ErrTooLarge = errors.New("lx: input too large")

// Doc is a parsed libxml2 document. Free it exactly once.
type Doc struct {
	p *C.xmlDoc
}

// Parse parses b with opts. It returns the document (possibly nil) and every
// diagnostic; a non-nil doc with severe diagnostics happens for namespace
// errors and in recover mode. A document with an element of more than
// MaxAttributes attributes is refused before libxml2 sees it
// (ErrTooManyAttributes). The caller owns a non-nil doc.
func Parse(b []byte, opts Options) (*Doc, *Errors) {
	if len(b) == 0 {
		return nil, &Errors{List: []Error{{Level: LevelFatal, Msg: ErrEmpty.Error()}}}
	}
	if len(b) > 1<<31-1 {
		return nil, &Errors{List: []Error{{Level: LevelFatal, Msg: ErrTooLarge.Error()}}}
	}
	if off := tooManyAttributes(b, MaxAttributes); off >= 0 {
		return nil, attributeCapError(b, off)
	}
	es := newErrs()
	buf, n := cbytes(b)
	ctxt := getCtxt()
	p := C.lx_parse_with(ctxt.p, buf, n, C.int(opts|OptNoError|OptNoWarn), &es.c)
	putCtxt(ctxt)
	e := es.take()
	if p == nil {
		if e == nil {
			e = &Errors{List: []Error{{Level: LevelFatal, Msg: "document could not be parsed"}}}
		}
		return nil, e
	}
	return &Doc{p: p}, e
}

// Free releases the document. Calling Free on a nil or already freed Doc is a no-op.
func (d *Doc) Free() {
	if d == nil || d.p == nil {
		return
	}
	C.xmlFreeDoc(d.p)
	d.p = nil
}

// HasDTD reports whether the document has an internal or external subset.
func (d *Doc) HasDTD() bool { return C.lx_has_dtd(d.p) != 0 }

// Root returns the document element (zero Node if none).
func (d *Doc) Root() Node { return Node{p: C.xmlDocGetRootElement(d.p)} }

// C14N modes.
const (
	C14N10    = C.XML_C14N_1_0
	C14NExc10 = C.XML_C14N_EXCLUSIVE_1_0
	C14N11    = C.XML_C14N_1_1
)

// C14N canonicalises the document, or only the subtree at n when n is not zero,
// with the given mode. inclusive lists InclusiveNamespaces prefixes for exclusive
// C14N ("#default" for the default namespace).
func (d *Doc) C14N(n Node, mode int, withComments bool, inclusive []string) ([]byte, error) {
	return d.c14n(n, c14nSubtree, mode, withComments, inclusive)
}

// C14NChild is C14N of the subtree at n, a child element of the document
// element, in time proportional to the subtree rather than to the
// document (libxml2's C14N walks the whole document for a subtree too, so
// canonicalising every child of a large document with C14N is quadratic).
// For the call, n stands in for the document element and then goes back
// where it was: the Doc must not be used concurrently. Exclusive C14N of
// n is the same either way; other modes, and any other node, fall back to
// C14N.
func (d *Doc) C14NChild(n Node, mode int, withComments bool, inclusive []string) ([]byte, error) {
	return d.c14n(n, c14nChild, mode, withComments, inclusive)
}

// C14NWithout canonicalises the whole document except the subtree at hide:
// the element, its attributes, its namespace nodes and its descendants are
// left out, everything around them (whitespace siblings included) stays.
// This is XML-DSig's enveloped-signature transform followed by C14N. A zero
// hide canonicalises the whole document.
func (d *Doc) C14NWithout(hide Node, mode int, withComments bool, inclusive []string) ([]byte, error) {
	return d.c14n(hide, c14nWithout, mode, withComments, inclusive)
}

// c14nScope says what c14n shows of the node it is given.
type c14nScope int

const (
	c14nSubtree c14nScope = iota // the subtree at n (the document when n is zero)
	c14nWithout                  // everything but the subtree at n
	c14nChild                    // the subtree at n, a child of the document element
)

// c14n runs libxml2's C14N showing what scope says of n (n zero: the
// whole document).
func (d *Doc) c14n(n Node, scope c14nScope, mode int, withComments bool, inclusive []string) ([]byte, error) {
	es := newErrs()
	var cl **C.char
	var cs []*C.char
	if len(inclusive) > 0 {
		cl = (**C.char)(C.calloc(C.size_t(len(inclusive)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		cs = unsafe.Slice(cl, len(inclusive))
		for i, s := range inclusive {
			cs[i] = C.CString(s)
		}
		defer func() {
			for _, c := range cs {
				C.free(unsafe.Pointer(c))
			}
			C.free(unsafe.Pointer(cl))
		}()
	}
	comments := C.int(0)
	if withComments {
		comments = 1
	}
	var out *C.char
	var outlen C.int
	var rc C.int
	switch {
	case scope == c14nWithout && n.p != nil:
		rc = C.lx_c14n_without(d.p, n.p, C.int(mode), comments, cl, C.int(len(inclusive)), &out, &outlen, &es.c)
	case scope == c14nChild && n.p != nil:
		rc = C.lx_c14n_child(d.p, n.p, C.int(mode), comments, cl, C.int(len(inclusive)), &out, &outlen, &es.c)
	default:
		rc = C.lx_c14n(d.p, n.p, C.int(mode), comments, cl, C.int(len(inclusive)), &out, &outlen, &es.c)
	}
	e := es.take()
	if rc != 0 || out == nil {
		if e == nil {
			e = &Errors{List: []Error{{Level: LevelFatal, Msg: "c14n failed"}}}
		}
		return nil, e
	}
	b := C.GoBytes(unsafe.Pointer(out), outlen)
	C.free(unsafe.Pointer(out))
	return b, nil
}
