package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bench"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// runBench is `xmlpipe bench [--duration D] [--json]`: the end-to-end pump
// benchmark (a tool-only two-hop flow, every envelope through the full chain).
func runBench(ctx context.Context, args []string, std streams) int {
	fs := newFlags("bench", "[--duration 5s] [--injectors N] [--journal] [--json]", std.err)
	duration := fs.Duration("duration", 5*time.Second, "length of the throughput phase")
	injectors := fs.Int("injectors", 4, "goroutines injecting envelopes")
	asJSON := fs.Bool("json", false, "print one JSON object")
	withJournal := fs.Bool("journal", false, "journal every envelope to a SQLite store in a temporary directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 0, 0) {
		return exitUsage
	}
	cfg := bench.Config{Duration: *duration, Injectors: *injectors}
	if *withJournal {
		dir, err := os.MkdirTemp("", "xmlpipe-bench-")
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer os.RemoveAll(dir)
		st, err := store.Open(dir, store.Options{})
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe bench: %v\n", err)
			return exitFailure
		}
		defer st.Close()
		cfg.Journal = organism.StoreJournal(st, nil)
	}
	r, err := bench.Run(ctx, cfg)
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
