package main

import (
	"context"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
)

// runGen is `xmlpipe gen [-out DIR] [-check]`: write the generated
// schemas/<listener>/ files of every compiled-in payload, or check that they
// are up to date (exit 1 when stale).
func runGen(_ context.Context, args []string, std streams) int {
	fs := newFlags("gen", "[-out DIR] [-check]", std.err)
	dir := fs.String("out", "schemas", "directory of the generated tree")
	check := fs.Bool("check", false, "only check that the tree is up to date")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 0, 0) {
		return exitUsage
	}
	entries := catalog.Builtin().GenEntries()
	if *check {
		if err := gen.CheckTree(*dir, entries); err != nil {
			fmt.Fprintf(std.err, "xmlpipe gen: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(std.out, "%s: %d listeners up to date\n", *dir, len(entries))
		return exitOK
	}
	if err := gen.WriteTree(*dir, entries); err != nil {
		fmt.Fprintf(std.err, "xmlpipe gen: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(std.out, "%s: %d listeners written\n", *dir, len(entries))
	return exitOK
}
