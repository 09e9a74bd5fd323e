package wasm

import (
	"bytes"
	"fmt"
	"strconv"
)

// wasmMagic begins every WebAssembly binary module.
var wasmMagic = []byte("\x00asm")

// checkBinary refuses a file that is no WebAssembly binary module with
// ErrNotModule and what it looks like instead: a developer who named the
// guest's source, a text-format module or an empty file learns how to
// build the module, not wazero's bare "invalid magic number".
func checkBinary(wasm []byte) error {
	if bytes.HasPrefix(wasm, wasmMagic) {
		return nil
	}
	trimmed := bytes.TrimLeft(wasm, " \t\r\n")
	switch {
	case len(wasm) == 0:
		return fmt.Errorf("%w: the file is empty", ErrNotModule)
	case bytes.HasPrefix(trimmed, []byte("(module")):
		return fmt.Errorf("%w: it is in the WebAssembly text format (.wat); compile it to a binary first "+
			"(wat2wasm)", ErrNotModule)
	}
	head := wasm[:min(len(wasm), 16)]
	return fmt.Errorf("%w: it begins %s, not \"\\x00asm\"; build the guest with "+
		"GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm ./DIR", ErrNotModule, strconv.Quote(string(head)))
}
