package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// withMemory assembles a module exporting handle () -> i32 whose body is
// code (locals and instructions, without the final end), with one memory
// of the given limits (the memory section's limits: a flag, the minimum
// and the maximum if the flag says so).
func withMemory(limits []byte, code []byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, []byte{1, 0x60, 0, 1, 0x7f})...) // (func (result i32))
	m = append(m, section(3, []byte{1, 0})...)
	m = append(m, section(5, []byte{1}, limits)...)
	m = append(m, section(7, []byte{1, 6}, []byte("handle"), []byte{0, 0})...)
	body := append(append([]byte{}, code...), 0x0b)
	return append(m, section(10, []byte{1}, uleb(uint64(len(body))), body)...)
}

// growMemory is handle's code: memory.grow by n pages and return what it
// returned plus one, so that a refused growth (-1) is a successful call and
// one that grew fails the call (ErrFailed).
func growMemory(n int64) []byte {
	code := []byte{0, 0x41}                     // no locals; i32.const n
	code = append(code, sleb(n)...)             //
	return append(code, 0x40, 0, 0x41, 1, 0x6a) // memory.grow 0; i32.const 1; i32.add
}

// TestMemoryDeclaredPastTheCap: a module whose memory starts past
// memory_mb is refused naming the option and how much it needs; one
// merely declaring a maximum past it (emscripten's 2 GiB, a toolchain's
// 4 GiB) loads, its maximum held to the cap: memory.grow past it fails in
// the guest, as it does for a module declaring no maximum.
func TestMemoryDeclaredPastTheCap(t *testing.T) {
	const mb = 2 // 32 pages
	_, err := Compile(context.Background(), "mem", withMemory(append([]byte{0}, uleb(100)...), growMemory(0)),
		Sandbox{MemoryMB: mb}, nil, nil)
	if !errors.Is(err, ErrLimits) {
		t.Errorf("a memory starting past the cap: err = %v, want ErrLimits", err)
	}
	for _, w := range []string{"memory starts at 100 pages (6.25 MiB)", "memory_mb 2", "at least 7"} {
		if err != nil && !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	for _, tc := range []struct {
		name   string
		limits []byte
	}{
		{"no maximum", []byte{0, 1}},
		{"a maximum past the cap", append([]byte{1, 1}, uleb(65536)...)},
		{"a maximum within the cap", []byte{1, 1, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(context.Background(), "mem", withMemory(tc.limits, growMemory(10)), Sandbox{MemoryMB: mb}, nil, nil)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			defer m.Close(context.Background())
			if _, err := m.Call(context.Background(), nil); !errors.Is(err, ErrFailed) {
				t.Errorf("memory.grow by 10 pages within the cap: err = %v, want ErrFailed (it grew)", err)
			}
			past, err := Compile(context.Background(), "mem", withMemory(tc.limits, growMemory(40)), Sandbox{MemoryMB: mb}, nil, nil)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			defer past.Close(context.Background())
			if _, err := past.Call(context.Background(), nil); err != nil {
				t.Errorf("memory.grow by 40 pages, past the cap: %v (want the growth refused: -1)", err)
			}
		})
	}
}
