package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
)

// wasmCheckFlags are the flags of `xmlpipe wasm check`, its usage written
// to w.
func wasmCheckFlags(w io.Writer) (*flag.FlagSet, *int) {
	fs := newFlags("wasm check", "[--memory-mb N] module.wasm", w)
	return fs, fs.Int("memory-mb", wasm.DefaultMemoryMB, "memory cap to check the module against")
}

// runWasm is `xmlpipe wasm check [--memory-mb N] module.wasm`: compile the
// module, check its imports and shape, start a reactor once, and print the
// schemas derived from its describe export.
func runWasm(ctx context.Context, args []string, std streams) int {
	if len(args) > 0 && isHelpArg(args[0]) {
		fs, _ := wasmCheckFlags(std.out)
		fs.Usage() // its one command's usage and flags
		return exitOK
	}
	if len(args) == 0 || args[0] != "check" {
		return subcommandUsage(std, "wasm", "usage: xmlpipe wasm check [--memory-mb N] module.wasm", []string{"check"}, args)
	}
	fs, mem := wasmCheckFlags(std.err)
	pos, code, ok := parseFlags(fs, args[1:])
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 1, 1) {
		return exitUsage
	}
	b, err := wasm.ReadModule(pos[0])
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe wasm check: %v\n", err)
		return exitFailure
	}
	m, err := wasm.Compile(ctx, pos[0], b, wasm.Sandbox{MemoryMB: *mem}, nil, nil)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe wasm check: %v\n", err)
		return exitFailure
	}
	defer m.Close(ctx)
	if err := m.Check(ctx); err != nil {
		fmt.Fprintf(std.err, "xmlpipe wasm check: %s does not start: %v\n", pos[0], err)
		return exitFailure
	}
	exports := m.Exports()
	sort.Strings(exports)
	fmt.Fprintf(std.out, "module: %s\nkind: %s\nexports: %v\n", pos[0], m.Kind(), exports)
	out, described, err := m.Describe(ctx)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe wasm check: describe: %v\n", err)
		return exitFailure
	}
	switch {
	case !described && m.Kind() == wasm.Command:
		fmt.Fprintln(std.out, "contract: not read (a command module runs once per call and cannot describe itself; "+
			"build it as a reactor, or give payload: or xsd: in organism.yaml)")
		return exitOK
	case !described:
		fmt.Fprintln(std.out, "contract: none in the module (no describe export); give payload: or xsd: in organism.yaml")
		return exitOK
	}
	c, err := wasm.ParseContract(out)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe wasm check: describe: %v\n", err)
		return exitFailure
	}
	for _, part := range []struct {
		name string
		f    wasm.Fields
	}{{"payload", c.Payload}, {"response", c.Response}} {
		if part.f.IsZero() {
			fmt.Fprintf(std.out, "\n%s: none (output is routed by its root tag)\n", part.name)
			continue
		}
		pt, err := part.f.PayloadType(nil)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe wasm check: %s: %v\n", part.name, err)
			return exitFailure
		}
		fmt.Fprintf(std.out, "\n%s <%s> schema:\n%s\nexample:\n%s\n", part.name, pt.Name(), pt.XSD(), pt.Example())
	}
	return exitOK
}
