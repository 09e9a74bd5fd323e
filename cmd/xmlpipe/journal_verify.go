package main

import (
	"context"
	"fmt"
)

// runJournalVerify is `xmlpipe journal verify`: checks the journal (every seq
// present or tombstoned, digests, required fields, SQLite quick_check),
// showing progress on a terminal; exit 1 on any fault.
func runJournalVerify(ctx context.Context, args []string, std streams) int {
	fs := newFlags("journal verify", "[--data DIR] [--config organism.yaml]", std.err)
	sf := addStoreFlags(fs)
	_, s, code, ok := sf.begin(fs, args, 0, 0, std.err)
	if !ok {
		return code
	}
	defer closeStore(s, std.err)
	bar := newProgress(std.err, "verifying")
	rep, err := s.Verify(ctx, bar.Update)
	bar.Done()
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal verify:", err)
		return exitFailure
	}
	fmt.Fprintf(std.out, "%d entries, %d tombstones, high-water seq %d\n", rep.Rows, rep.Tombstones, rep.HighSeq)
	if rep.OK() {
		fmt.Fprintln(std.out, "journal OK")
		return exitOK
	}
	for _, f := range rep.Faults {
		fmt.Fprintln(std.out, "fault:", f)
	}
	fmt.Fprintf(std.out, "%d fault(s)\n", len(rep.Faults))
	return exitFailure
}
