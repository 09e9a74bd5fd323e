package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// runJournalBackup is `xmlpipe journal backup DIR`: copies the data
// directory, while an organism runs on it, into DIR (new, or empty), each
// database as of one commit (store.BackupDataDir). Starting an organism
// with --data DIR, or moving DIR in place of the data directory, restores
// it.
func runJournalBackup(ctx context.Context, args []string, std streams) int {
	fs := newFlags("journal backup", "[--data DIR] [--config organism.yaml] TARGET_DIR", std.err)
	sf := addStoreFlags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 1, 1) {
		return exitUsage
	}
	dir, err := sf.dir()
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal backup:", err)
		return exitFailure
	}
	rep, err := store.BackupDataDir(ctx, dir, pos[0])
	if err != nil {
		fmt.Fprintln(std.err, "xmlpipe journal backup:", err)
		return exitFailure
	}
	abs, _ := filepath.Abs(pos[0])
	fmt.Fprintf(std.out, "backed up %s into %s: journal up to seq %d; databases %v, files %v, %d bytes\n",
		dir, abs, rep.JournalSeq, rep.Databases, rep.Files, rep.Bytes)
	return exitOK
}
