package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bench"
)

// runBench is `xmlpipe bench [--duration D] [--json]`: the end-to-end pump
// benchmark (a tool-only two-hop flow, every envelope through the full chain).
func runBench(ctx context.Context, args []string, std streams) int {
	fs := newFlags("bench", "[--duration 5s] [--injectors N] [--json]", std.err)
	duration := fs.Duration("duration", 5*time.Second, "length of the throughput phase")
	injectors := fs.Int("injectors", 4, "goroutines injecting envelopes")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 0, 0) {
		return exitUsage
	}
	r, err := bench.Run(ctx, bench.Config{Duration: *duration, Injectors: *injectors})
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(std.out, string(b))
		return exitOK
	}
	fmt.Fprint(std.out, r.String())
	return exitOK
}
