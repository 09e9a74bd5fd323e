package wasm

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ErrLimits means the module asks for more than its sandbox allows, in a
// way wazero would honour with host memory before any cap applies: tables
// past memory_mb, functions with too many locals.
var ErrLimits = errors.New("wasm: module asks for more than its sandbox allows")

// maxLocals bounds the locals one function declares: the bound the
// browsers' engines (V8's kV8MaxWasmFunctionLocals, SpiderMonkey's
// MaxLocals) hold every module to, so no toolchain's output passes it.
// wazero allocates a byte per declared local while it decodes a function,
// and a declaration is a count: five bytes ask for 2³²-1 of them.
const maxLocals = 50000

// referenceBytes is what one table element holds on the host (a pointer).
const referenceBytes = 8

// Section ids of the binary format.
const (
	sectionTable  = 4
	sectionMemory = 5
	sectionCode   = 10
)

// boundModule reads the sections of wasm that make wazero allocate host
// memory outside linear memory — which memory_mb caps — and returns the
// module to compile:
//
//   - the tables: their references are host memory, and a table without a
//     maximum grows to 2³²-1 of them (32 GiB) at one table.grow. The tables
//     together may hold memoryMB MiB of references: their declared minimums
//     must fit (else ErrLimits), and every table's maximum is lowered, or
//     set when it declares none, to its minimum plus an equal share of what
//     is left, so that table.grow past the cap fails in the guest (-1), as
//     memory.grow past it does;
//   - the code: a function declaring more than maxLocals locals is refused
//     (ErrLimits), before wazero allocates them;
//   - every vector: one claiming more elements than its section has bytes
//     is refused (ErrLimits, see checkVectors), before wazero allocates
//     them.
//
// A module whose framing is not the binary format's is returned unchanged,
// for wazero to refuse; a table or code section it cannot read is refused.
func boundModule(wasm []byte, memoryMB int) ([]byte, error) {
	const headerLen = 8
	if len(wasm) < headerLen || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return wasm, nil
	}
	out := append(make([]byte, 0, len(wasm)), wasm[:headerLen]...)
	seen := map[byte]bool{}
	for rest := wasm[headerLen:]; len(rest) > 0; {
		id := rest[0]
		size, n, ok := readU32(rest[1:])
		if !ok || uint64(len(rest)-1-n) < uint64(size) {
			return wasm, nil
		}
		head, body := rest[:1+n], rest[1+n:1+n+int(size)]
		rest = rest[1+n+int(size):]
		if (id == sectionTable || id == sectionCode) && seen[id] {
			return nil, fmt.Errorf("%w: a second section %d", ErrLimits, id)
		}
		seen[id] = true
		if err := checkVectors(id, body); err != nil {
			return nil, err
		}
		switch id {
		case sectionTable:
			tables, err := boundTables(body, memoryMB)
			if err != nil {
				return nil, err
			}
			out = append(out, sectionTable)
			out = appendU32(out, uint32(len(tables)))
			out = append(out, tables...)
			continue
		case sectionMemory:
			if err := checkMemory(body, memoryMB); err != nil {
				return nil, err
			}
		case sectionCode:
			if err := checkLocals(body); err != nil {
				return nil, err
			}
		}
		out = append(append(out, head...), body...)
	}
	return out, nil
}

// pageBytes is the size of a page of linear memory.
const pageBytes = 64 << 10

// checkMemory refuses (ErrLimits) a memory section body b declaring a
// memory whose minimum is past memoryMB, saying how much the module needs
// and which option gives it: wazero's own refusal names neither. A memory
// whose maximum is past memoryMB is left to wazero, which holds it to the
// cap; a body it cannot read is left to wazero too.
func checkMemory(b []byte, memoryMB int) error {
	count, n, ok := readU32(b)
	if !ok {
		return nil
	}
	b = b[n:]
	for range count {
		if len(b) == 0 {
			return nil
		}
		flags := b[0]
		if flags&^3 != 0 { // memory64 or an unknown form: wazero's to refuse
			return nil
		}
		min, n, ok := readU32(b[1:])
		if !ok {
			return nil
		}
		b = b[1+n:]
		if flags&1 != 0 {
			if _, n, ok = readU32(b); !ok {
				return nil
			}
			b = b[n:]
		}
		if capPages := uint64(memoryMB) << 20 / pageBytes; uint64(min) > capPages {
			need := (uint64(min)*pageBytes + 1<<20 - 1) >> 20
			return fmt.Errorf("%w: its memory starts at %d pages (%s MiB), over memory_mb %d: "+
				"give it capabilities.memory_mb of at least %d (xmlpipe wasm check --memory-mb)", ErrLimits, min,
				strconv.FormatFloat(float64(min)*pageBytes/(1<<20), 'f', -1, 64), memoryMB, need)
		}
	}
	return nil
}

// table is one table type of the table section: its element type's
// encoding, its minimum and its maximum (has says whether it declares one).
type table struct {
	refType  []byte
	min, max uint32
	has      bool
}

// boundTables checks the table section body b against memoryMB and returns
// it with every table's maximum bounded (see boundModule).
func boundTables(b []byte, memoryMB int) ([]byte, error) {
	count, n, ok := readU32(b)
	if !ok {
		return nil, fmt.Errorf("%w: the table section is unreadable", ErrLimits)
	}
	b = b[n:]
	tables := make([]table, 0, min(count, 1024))
	var mins uint64
	for i := range count {
		var t table
		var err error
		if t, b, err = readTable(b); err != nil {
			return nil, fmt.Errorf("%w: table %d: %w", ErrLimits, i, err)
		}
		mins += uint64(t.min)
		tables = append(tables, t)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: the table section has bytes after its tables", ErrLimits)
	}
	budget := uint64(memoryMB) << 20 / referenceBytes
	if mins > budget {
		return nil, fmt.Errorf("%w: its tables start with %d references (%d bytes), over memory_mb %d",
			ErrLimits, mins, mins*referenceBytes, memoryMB)
	}
	out := appendU32(nil, count)
	for _, t := range tables {
		limit := uint64(t.min) + (budget-mins)/uint64(len(tables))
		if !t.has || uint64(t.max) > limit {
			t.max = uint32(min(limit, 1<<32-1))
		}
		out = append(out, t.refType...)
		out = appendU32(appendU32(append(out, 0x01), t.min), t.max) // limits with a maximum
	}
	return out, nil
}

// readTable reads one table type: a reference type (one byte, or a prefix
// and a heap type) and its limits. A table with an initializer expression
// (0x40 0x00 …) or limits other than a plain minimum, with or without a
// maximum, is refused.
func readTable(b []byte) (table, []byte, error) {
	if len(b) == 0 {
		return table{}, nil, errors.New("truncated")
	}
	var t table
	switch b[0] {
	case 0x40:
		return table{}, nil, errors.New("a table with an initializer expression is not supported")
	case 0x63, 0x64: // (ref null ht), (ref ht)
		n, ok := skipLEB(b[1:], 5)
		if !ok {
			return table{}, nil, errors.New("unreadable heap type")
		}
		t.refType, b = b[:1+n], b[1+n:]
	default:
		t.refType, b = b[:1], b[1:]
	}
	if len(b) == 0 {
		return table{}, nil, errors.New("truncated limits")
	}
	flag := b[0]
	b = b[1:]
	var n int
	var ok bool
	switch flag {
	case 0x00, 0x01:
		if t.min, n, ok = readU32(b); !ok {
			return table{}, nil, errors.New("unreadable minimum")
		}
		b = b[n:]
		if flag == 0x01 {
			if t.max, n, ok = readU32(b); !ok {
				return table{}, nil, errors.New("unreadable maximum")
			}
			b, t.has = b[n:], true
		}
	default:
		return table{}, nil, fmt.Errorf("limits %#x are not supported", flag)
	}
	return t, b, nil
}

// checkLocals refuses a code section body b holding a function that
// declares more than maxLocals locals.
func checkLocals(b []byte) error {
	count, n, ok := readU32(b)
	if !ok {
		return fmt.Errorf("%w: the code section is unreadable", ErrLimits)
	}
	b = b[n:]
	for i := range count {
		size, n, ok := readU32(b)
		if !ok || uint64(len(b)-n) < uint64(size) {
			return fmt.Errorf("%w: function body %d is unreadable", ErrLimits, i)
		}
		body := b[n : n+int(size)]
		b = b[n+int(size):]
		locals, err := countLocals(body)
		if err != nil {
			return fmt.Errorf("%w: function body %d: %w", ErrLimits, i, err)
		}
		if locals > maxLocals {
			return fmt.Errorf("%w: function body %d declares %d locals (at most %d)", ErrLimits, i, locals, maxLocals)
		}
	}
	return nil
}

// countLocals sums the local declarations at the start of a function body.
func countLocals(body []byte) (uint64, error) {
	decls, n, ok := readU32(body)
	if !ok {
		return 0, errors.New("unreadable locals")
	}
	body = body[n:]
	var sum uint64
	for range decls {
		count, n, ok := readU32(body)
		if !ok || len(body) == n {
			return 0, errors.New("unreadable locals")
		}
		sum += uint64(count)
		if sum > maxLocals {
			return sum, nil
		}
		typ := body[n]
		body = body[n+1:]
		if typ == 0x63 || typ == 0x64 { // a reference type with a heap type
			m, ok := skipLEB(body, 5)
			if !ok {
				return 0, errors.New("unreadable local type")
			}
			body = body[m:]
		}
	}
	return sum, nil
}

// readU32 reads an unsigned LEB128 number of at most 32 bits, as the
// binary format encodes counts, sizes and limits; n is its length.
func readU32(b []byte) (v uint32, n int, ok bool) {
	var x uint64
	for i := 0; i < len(b) && i < 5; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if x > 1<<32-1 {
				return 0, 0, false
			}
			return uint32(x), i + 1, true
		}
	}
	return 0, 0, false
}

// skipLEB returns the length of the LEB128 number at the start of b, of at
// most max bytes.
func skipLEB(b []byte, max int) (int, bool) {
	for i := 0; i < len(b) && i < max; i++ {
		if b[i]&0x80 == 0 {
			return i + 1, true
		}
	}
	return 0, false
}

// appendU32 appends v as unsigned LEB128.
func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
