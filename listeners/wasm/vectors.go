package wasm

import (
	"errors"
	"fmt"
)

// errUnreadable is what sectionReader records when a section does not
// read as the binary format says.
var errUnreadable = errors.New("unreadable")

// checkVectors refuses a section of id whose vectors claim more elements
// (or bytes) than the section has bytes left. wazero allocates a vector's
// elements from its count before it reads them, so five bytes saying
// 2³²-1 imports, element expressions or data bytes make it ask for up to
// hundreds of GiB — a fatal out-of-memory error that takes the organism
// down, at start, at a reload or at `xmlpipe wasm check` — before it finds
// the section too short. Every element takes at least one byte, so a count
// above the bytes left is never a real module. Every section wazero
// decodes is read here (the code section's bodies only as far as their
// locals, which checkLocals bounds; the table section is boundTables');
// a form of an element this reader does not know is refused.
func checkVectors(id byte, body []byte) error {
	r := &sectionReader{b: body}
	switch id {
	case 0: // custom: wazero decodes the "name" one
		if r.name() == "name" {
			r.names()
		}
	case 1: // types
		for range r.vec() {
			if r.byte() == 0x4e { // a recursive group of function types
				for range r.vec() {
					r.funcType(r.byte())
				}
				continue
			}
			r.funcType(r.last())
		}
	case 2: // imports
		for range r.vec() {
			r.name()
			r.name()
			switch r.byte() {
			case 0x00, 0x04: // a function's type; a tag's attribute and type
				if r.last() == 0x04 {
					r.byte()
				}
				r.u32()
			case 0x01:
				r.valType()
				r.limits()
			case 0x02:
				r.limits()
			case 0x03:
				r.valType()
				r.byte()
			default:
				r.fail()
			}
		}
	case 3: // functions
		for range r.vec() {
			r.u32()
		}
	case 5: // memories
		for range r.vec() {
			r.limits()
		}
	case 6: // globals
		for range r.vec() {
			r.valType()
			r.byte()
			r.constExpr()
		}
	case 7: // exports
		for range r.vec() {
			r.name()
			r.byte()
			r.u32()
		}
	case 9: // elements
		for range r.vec() {
			r.element()
		}
	case sectionCode:
		for range r.vec() {
			r.skip(r.u32())
		}
	case 11: // data
		for range r.vec() {
			switch r.u32() {
			case 0:
				r.constExpr()
			case 1:
			case 2:
				r.u32()
				r.constExpr()
			default:
				r.fail()
			}
			r.skip(r.u32())
		}
	case 13: // tags
		for range r.vec() {
			r.byte()
			r.u32()
		}
	}
	if r.err != nil {
		return fmt.Errorf("%w: section %d: a vector or name longer than the section, or an unknown form", ErrLimits, id)
	}
	return nil
}

// sectionReader reads a section's body; after the first failure (err set)
// every read returns zero and consumes nothing, so loops over vectors end
// within the section's length.
type sectionReader struct {
	b    []byte
	prev byte // the byte read last
	err  error
}

func (r *sectionReader) fail() { r.err, r.b = errUnreadable, nil }

// byte reads one byte.
func (r *sectionReader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return 0
	}
	r.prev, r.b = r.b[0], r.b[1:]
	return r.prev
}

// last is the byte read last.
func (r *sectionReader) last() byte { return r.prev }

// u32 reads an unsigned LEB128 number of 32 bits.
func (r *sectionReader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, ok := readU32(r.b)
	if !ok {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// leb skips a LEB128 number of at most max bytes.
func (r *sectionReader) leb(max int) {
	if r.err != nil {
		return
	}
	n, ok := skipLEB(r.b, max)
	if !ok {
		r.fail()
		return
	}
	r.b = r.b[n:]
}

// skip skips n bytes, which must be there.
func (r *sectionReader) skip(n uint32) {
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		r.fail()
		return
	}
	r.b = r.b[n:]
}

// vec reads a vector's count, which may not pass the bytes left (each
// element takes one at least).
func (r *sectionReader) vec() uint32 {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)) {
		r.fail()
		return 0
	}
	return n
}

// name reads a name (a vector of bytes) and returns it.
func (r *sectionReader) name() string {
	n := r.u32()
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// valType reads a value type: one byte, or a reference type's prefix and
// its heap type.
func (r *sectionReader) valType() {
	if b := r.byte(); b == 0x63 || b == 0x64 {
		r.leb(5)
	}
}

// funcType reads a function type whose leading byte, form, was read.
func (r *sectionReader) funcType(form byte) {
	if form != 0x60 {
		r.fail()
		return
	}
	for range 2 { // parameters, results
		for range r.vec() {
			r.valType()
		}
	}
}

// limits reads a table's or memory's limits: a minimum, and a maximum
// when the flag says (shared or not).
func (r *sectionReader) limits() {
	switch r.byte() {
	case 0x00, 0x02:
		r.u32()
	case 0x01, 0x03:
		r.u32()
		r.u32()
	default:
		r.fail()
	}
}

// constExpr reads a constant expression up to its end (0x0b).
func (r *sectionReader) constExpr() {
	for r.err == nil {
		switch r.byte() {
		case 0x0b:
			return
		case 0x41: // i32.const
			r.leb(5)
		case 0x42: // i64.const
			r.leb(10)
		case 0x43: // f32.const
			r.skip(4)
		case 0x44: // f64.const
			r.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			r.u32()
		case 0xd0: // ref.null
			r.leb(5)
		case 0xfd: // v128.const
			if r.u32() != 12 {
				r.fail()
			}
			r.skip(16)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constants: add, sub, mul
		default:
			r.fail()
		}
	}
}

// element reads an element segment, of any of its eight forms.
func (r *sectionReader) element() {
	flags := r.u32()
	if flags > 7 {
		r.fail()
		return
	}
	if flags&0b10 != 0 && flags&0b01 == 0 { // an explicit table index
		r.u32()
	}
	if flags&0b01 == 0 { // active: an offset
		r.constExpr()
	}
	exprs := flags&0b100 != 0
	if flags&0b11 != 0 { // an element kind or reference type
		if exprs {
			r.valType()
		} else {
			r.byte()
		}
	}
	for range r.vec() {
		if exprs {
			r.constExpr()
		} else {
			r.u32()
		}
	}
}

// names reads the subsections of the "name" custom section: the module's
// name, the functions' and the locals' (others are skipped by size).
func (r *sectionReader) names() {
	for r.err == nil && len(r.b) > 0 {
		id := r.byte()
		size := r.u32()
		if r.err != nil || uint64(size) > uint64(len(r.b)) {
			r.fail()
			return
		}
		sub := &sectionReader{b: r.b[:size]}
		r.b = r.b[size:]
		switch id {
		case 0:
			sub.name()
		case 1:
			sub.nameMap()
		case 2:
			for range sub.vec() {
				sub.u32()
				sub.nameMap()
			}
		}
		if sub.err != nil {
			r.fail()
		}
	}
}

// nameMap reads a vector of (index, name).
func (r *sectionReader) nameMap() {
	for range r.vec() {
		r.u32()
		r.name()
	}
}
