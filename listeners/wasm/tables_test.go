package wasm

import (
	"context"
	"errors"
	"testing"
)

// uleb is the unsigned LEB128 encoding of v.
func uleb(v uint64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

// sleb is the signed LEB128 encoding of v.
func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// section is one section of a module: its id, then its body with its size.
func section(id byte, body ...[]byte) []byte {
	var b []byte
	for _, p := range body {
		b = append(b, p...)
	}
	return append(append([]byte{id}, uleb(uint64(len(b)))...), b...)
}

// reactor assembles a module exporting handle () -> i32, whose body is
// code (locals declarations and instructions, without the final end),
// with the given table section body (nil: none).
func reactor(tables []byte, code []byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, []byte{1, 0x60, 0, 1, 0x7f})...) // (func (result i32))
	m = append(m, section(3, []byte{1, 0})...)
	if tables != nil {
		m = append(m, section(4, tables)...)
	}
	m = append(m, section(7, []byte{1, 6}, []byte("handle"), []byte{0, 0})...)
	body := append(append([]byte{}, code...), 0x0b)
	m = append(m, section(10, []byte{1}, uleb(uint64(len(body))), body)...)
	return m
}

// growBy is handle's code: table.grow the first table by n null
// references, and return what it returned plus one, so that a refused
// growth (-1) is a successful call and one that grew fails the call.
func growBy(n int64) []byte {
	code := []byte{0}                  // no locals
	code = append(code, 0xd0, 0x70)    // ref.null func
	code = append(code, 0x41)          // i32.const n
	code = append(code, sleb(n)...)    //
	code = append(code, 0xfc, 15, 0)   // table.grow 0
	code = append(code, 0x41, 1, 0x6a) // i32.const 1; i32.add
	return code
}

// TestTablesWithinTheMemoryCap: a table's references are host memory
// (8 bytes each) that linear memory's cap does not bound, and a table
// without a maximum grows to 2³²-1 of them (32 GiB) at one instruction,
// so the guest's tables are held to memory_mb as well: a table declared
// past it is refused when the module compiles, and table.grow past it fails
// in the guest (-1), as memory.grow past the cap does.
func TestTablesWithinTheMemoryCap(t *testing.T) {
	const mb = 1 // memory_mb: tables hold at most 1 MiB of references (131072)
	table := func(limits ...byte) []byte { return append([]byte{1, 0x70}, limits...) }
	twoTables := append([]byte{2, 0x70, 0}, append(uleb(70000), 0x70, 0)...)
	twoTables = append(twoTables, uleb(70000)...)
	tests := []struct {
		name       string
		tables     []byte
		grow       int64
		compileErr bool
	}{
		{name: "grow a table without a maximum past the cap", tables: table(0, 1), grow: 1 << 24},
		{name: "grow a table whose maximum is past the cap", tables: append(table(1, 1), uleb(1<<30)...), grow: 1 << 24},
		{name: "declare a table past the cap", tables: append(table(0), uleb(1<<27)...), compileErr: true},
		{name: "declare two tables past the cap together", tables: twoTables, compileErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(context.Background(), "tables", reactor(tc.tables, growBy(tc.grow)),
				Sandbox{MemoryMB: mb}, nil, nil)
			if tc.compileErr {
				if !errors.Is(err, ErrLimits) {
					if err == nil {
						_ = m.Close(context.Background())
					}
					t.Fatalf("Compile: err = %v, want ErrLimits", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			defer m.Close(context.Background())
			if _, err := m.Call(context.Background(), nil); err != nil {
				t.Fatalf("table.grow by %d past the cap: %v (want the growth refused: -1)", tc.grow, err)
			}
		})
	}
}

// TestTablesGrowWithinTheCap: a table grows as far as the cap allows.
func TestTablesGrowWithinTheCap(t *testing.T) {
	m, err := Compile(context.Background(), "tables", reactor([]byte{1, 0x70, 0, 1}, growBy(1000)),
		Sandbox{MemoryMB: 1}, nil, nil)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	defer m.Close(context.Background())
	if _, err := m.Call(context.Background(), nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("table.grow by 1000 within the cap: err = %v, want ErrFailed (handle returned the old size + 1)", err)
	}
}

// TestTooManyLocalsRefused: a function declares its locals as counts, so a
// few bytes ask for 2³²-1 of them, which wazero allocates while it decodes
// the module: a module whose function declares more than maxLocals (the
// bound browsers' engines hold every module to) is refused before that.
func TestTooManyLocalsRefused(t *testing.T) {
	tests := []struct {
		name   string
		locals []byte
		ok     bool
	}{
		{name: "within the bound", locals: append(append([]byte{2}, uleb(maxLocals-1)...), append([]byte{0x7f, 1}, 0x7e)...), ok: true},
		{name: "one declaration past the bound", locals: append(append([]byte{1}, uleb(maxLocals+1)...), 0x7f)},
		{name: "two declarations past the bound together", locals: append(append(append([]byte{2}, uleb(maxLocals)...), 0x7f, 1), 0x7e)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code := append(append([]byte{}, tc.locals...), 0x41, 0) // i32.const 0
			m, err := Compile(context.Background(), "locals", reactor(nil, code), Sandbox{}, nil, nil)
			if err == nil {
				defer m.Close(context.Background())
			}
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Compile: %v", err)
			case !tc.ok && !errors.Is(err, ErrLimits):
				t.Fatalf("Compile: err = %v, want ErrLimits", err)
			}
		})
	}
}

// FuzzBoundModule: boundModule never panics, and what it returns is a
// fixed point (bounding it again changes nothing) whose tables start and
// grow within the budget.
func FuzzBoundModule(f *testing.F) {
	f.Add(reactor([]byte{1, 0x70, 0, 1}, growBy(1000)), 1)
	f.Add(reactor(append([]byte{1, 0x70, 1, 1}, uleb(1<<30)...), growBy(1)), 2)
	f.Add(reactor([]byte{2, 0x70, 0, 5, 0x6f, 1, 2, 9}, growBy(3)), 1)
	f.Add(reactor(nil, append(append([]byte{1}, uleb(maxLocals)...), 0x7f, 0x41, 0)), 64)
	f.Fuzz(func(t *testing.T, wasm []byte, memoryMB int) {
		memoryMB = 1 + abs(memoryMB)%4096
		out, err := boundModule(wasm, memoryMB)
		if err != nil {
			return
		}
		again, err := boundModule(out, memoryMB)
		if err != nil {
			t.Fatalf("bounding the bounded module: %v", err)
		}
		if string(again) != string(out) {
			t.Fatalf("bounding the bounded module changed it:\n% x\n% x", out, again)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
