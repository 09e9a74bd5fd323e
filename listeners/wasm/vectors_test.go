package wasm

import (
	"context"
	"errors"
	"testing"
)

// TestVectorsLongerThanTheirSectionRefused: a vector's count is read
// before its elements, and wazero allocates them from it; a count of
// 2³²-1 in a section of a few bytes made a 20-byte module a fatal
// out-of-memory error of the whole process ("runtime: out of memory",
// which no recover catches). Each is refused before wazero sees it.
func TestVectorsLongerThanTheirSectionRefused(t *testing.T) {
	huge := uleb(1<<32 - 1)
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	header := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	tests := []struct {
		name    string
		section []byte
	}{
		{"imports", section(2, huge)},
		{"a function type's parameters", section(1, []byte{1, 0x60}, huge)},
		{"a recursive group's types", section(1, []byte{1, 0x4e}, huge)},
		{"functions", section(3, huge)},
		{"memories", section(5, huge)},
		{"globals", section(6, huge)},
		{"exports", section(7, huge)},
		{"an export's name", section(7, []byte{1}, huge)},
		{"elements", section(9, huge)},
		{"an element segment's expressions", section(9, []byte{1, 5, 0x70}, huge)},
		{"an element segment's functions", section(9, []byte{1, 1, 0}, huge)},
		{"code", section(10, huge)},
		{"data", section(11, huge)},
		{"a data segment's bytes", section(11, []byte{1, 1}, huge)},
		{"tags", section(13, huge)},
		{"a custom section's name", section(0, huge)},
		{"the name section's functions", section(0, cat([]byte{4}, []byte("name"), []byte{1, 5}, huge))},
		{"the name section's locals", section(0, cat([]byte{4}, []byte("name"), []byte{2, 7, 1, 0}, huge))},
		{"an import's module name", section(2, []byte{1}, huge)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(context.Background(), "vectors", append(append([]byte{}, header...), tc.section...),
				Sandbox{}, nil, nil)
			if err == nil {
				_ = m.Close(context.Background())
			}
			if !errors.Is(err, ErrLimits) {
				t.Fatalf("Compile: err = %v, want ErrLimits", err)
			}
		})
	}
}

// TestVectorsOfEveryFormRead: the forms of elements the binary format
// allows, in every section, are read (and the module compiles).
func TestVectorsOfEveryFormRead(t *testing.T) {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, []byte{2, 0x60, 0, 1, 0x7f, 0x4e, 1, 0x60, 1, 0x7e, 0})...) // () -> i32; rec (i64) -> ()
	m = append(m, section(3, []byte{1, 0})...)
	m = append(m, section(4, []byte{1, 0x70, 0, 2})...)
	m = append(m, section(5, []byte{1, 1, 1, 2})...)
	m = append(m, section(6, []byte{2,
		0x7f, 0, 0x41, 7, 0x0b, // i32 = 7
		0x70, 0, 0xd0, 0x70, 0x0b})...) // funcref = ref.null func
	m = append(m, section(7, []byte{1, 6}, []byte("handle"), []byte{0, 0})...)
	m = append(m, section(9, []byte{3,
		0, 0x41, 0, 0x0b, 1, 0, // active, table 0, functions
		1, 0, 1, 0, // passive, functions
		7, 0x70, 1, 0xd2, 0, 0x0b})...) // declarative, expressions
	body := []byte{1, 2, 0x7e, 0x41, 0, 0x0b} // two i64 locals; i32.const 0
	m = append(m, section(10, []byte{1}, uleb(uint64(len(body))), body)...)
	m = append(m, section(11, []byte{2, 0, 0x41, 0, 0x0b, 2, 'h', 'i', 1, 1, '!'})...)
	names := append(append([]byte{4}, "name"...), 1, 9, 1, 0, 6)
	names = append(names, "handle"...)
	names = append(names, 2, 6, 1, 0, 1, 0, 1, 'x')
	m = append(m, section(0, names)...)
	mod, err := Compile(context.Background(), "forms", m, Sandbox{}, nil, nil)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	_ = mod.Close(context.Background())
}
