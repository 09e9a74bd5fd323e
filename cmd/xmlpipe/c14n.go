package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// runC14N is `xmlpipe c14n FILE|-`: the exclusive C14N bytes of a document
// on stdout, or the error and its diagnostics on stderr (exit 1).
func runC14N(_ context.Context, args []string, std streams) int {
	fs := newFlags("c14n", "FILE|-", std.err)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 1, 1) {
		return exitUsage
	}
	raw, err := readInput(pos[0], std.in)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe c14n: %v\n", err)
		return exitFailure
	}
	out, err := stage.Canonicalize(raw)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe c14n: %s\n", failureText(err))
		return exitFailure
	}
	if _, err := std.out.Write(out); err != nil {
		fmt.Fprintf(std.err, "xmlpipe c14n: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// failureText renders an error and, for a *failure.Failure, every diagnostic
// on its own line.
func failureText(err error) string {
	f, ok := errors.AsType[*failure.Failure](err)
	if !ok {
		return err.Error()
	}
	s := fmt.Sprintf("%s: %v", f.Stage, f.Err)
	for _, d := range f.Diagnostics {
		s += "\n  " + d.String()
	}
	return s
}
