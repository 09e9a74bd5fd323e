package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// journalCommands are the subcommands of `xmlpipe journal`.
var journalCommands = map[string]commandFunc{
	"tail":   runJournalTail,
	"thread": runJournalThread,
	"verify": runJournalVerify,
	"export": runJournalExport,
	"replay": runJournalReplay,
}

// runJournal is `xmlpipe journal tail|thread|verify|export|replay …`.
func runJournal(ctx context.Context, args []string, std streams) int {
	if len(args) == 0 || journalCommands[args[0]] == nil {
		fmt.Fprintln(std.err, "usage: xmlpipe journal tail [-n N] [-f] | thread <uuid> | verify | export [--out DIR] |\n"+
			"                       replay <uuid> [--into organism.yaml]  [--data DIR] [--config organism.yaml]")
		return exitUsage
	}
	return journalCommands[args[0]](ctx, args[1:], std)
}

// journalStoreFlags are the flags of every journal subcommand that opens the
// store: --data, or --config to take organism.data_dir from.
type journalStoreFlags struct {
	data, config *string
}

func addStoreFlags(fs interface {
	String(name, value, usage string) *string
}) journalStoreFlags {
	return journalStoreFlags{
		data:   fs.String("data", "", "data directory of the store (default: organism.data_dir of --config)"),
		config: fs.String("config", "", "organism.yaml whose data_dir to use (default: ./organism.yaml or the embedded hello-world)"),
	}
}

// open opens the store named by the flags read-only: the journal commands
// only read, and so work while an organism holds the store.
func (f journalStoreFlags) open() (*store.Reader, error) {
	dir := *f.data
	if dir == "" {
		var pos []string
		if *f.config != "" {
			pos = []string{*f.config}
		}
		cfg, err := resolveConfig(pos).load()
		if err != nil {
			return nil, err
		}
		dir = cfg.Organism.DataDir
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("journal: data directory: %w", err)
	}
	return store.OpenReadOnly(dir)
}

// closeStore closes r, reporting a failure on stderr.
func closeStore(r *store.Reader, stderr io.Writer) {
	if err := r.Close(); err != nil {
		fmt.Fprintln(stderr, "xmlpipe journal: close store:", err)
	}
}
