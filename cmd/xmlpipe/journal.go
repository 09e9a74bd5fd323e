package main

import (
	"context"
	"flag"
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
	"backup": runJournalBackup,
}

// journalUsage lists the journal subcommands.
const journalUsage = `usage: xmlpipe journal <command> [--data DIR] [--config organism.yaml]
  tail [-n N] [-f]                       the last entries (-f: follow a running organism)
  thread <uuid>                          one conversation's entries
  verify                                 check the journal: every entry present, digests, SQLite integrity
  export [--out DIR]                     one XML document per thread, written to DIR
  replay <uuid> [--into organism.yaml]   re-run a conversation's inputs and diff the outputs
  backup TARGET_DIR                      copy the data directory, each database as of one commit, into TARGET_DIR
The journal is opened read-only: these work while an organism runs.`

// runJournal is `xmlpipe journal tail|thread|verify|export|replay …`.
func runJournal(ctx context.Context, args []string, std streams) int {
	if len(args) > 0 && isHelpArg(args[0]) {
		fmt.Fprintln(std.out, journalUsage)
		return exitOK
	}
	if len(args) == 0 || journalCommands[args[0]] == nil {
		return subcommandUsage(std, "journal", journalUsage, commandNames(journalCommands), args)
	}
	return journalCommands[args[0]](ctx, args[1:], std)
}

// journalStoreFlags are the flags of every journal subcommand that opens the
// store: --data, or --config to take organism.data_dir from.
type journalStoreFlags struct {
	data, config *string
}

func addStoreFlags(fs *flag.FlagSet) journalStoreFlags {
	return journalStoreFlags{
		data:   fs.String("data", "", "data directory of the store (default: organism.data_dir of --config)"),
		config: configFlag(fs, "organism.yaml whose data_dir to use (default: ./organism.yaml, ./config/organism.yaml or the embedded hello-world)"),
	}
}

// open opens the store named by the flags read-only: the journal commands
// only read, and so work while an organism holds the store.
func (f journalStoreFlags) open() (*store.Reader, error) {
	dir, err := f.dir()
	if err != nil {
		return nil, err
	}
	return store.OpenReadOnly(dir)
}

// dir is the data directory the flags name, which must exist.
func (f journalStoreFlags) dir() (string, error) {
	dir := *f.data
	if dir == "" {
		var pos []string
		if *f.config != "" {
			pos = []string{*f.config}
		}
		cfg, err := resolveConfig(pos).load()
		if err != nil {
			return "", err
		}
		dir = cfg.Organism.DataDir
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("journal: data directory: %w", err)
	}
	return dir, nil
}

// begin parses a journal subcommand's arguments (lo to hi positional ones)
// and opens the store read-only. When ok is false the command ends with code:
// usage was printed or the error reported as "xmlpipe <command>: …".
func (f journalStoreFlags) begin(fs *flag.FlagSet, args []string, lo, hi int, stderr io.Writer) (pos []string, r *store.Reader, code int, ok bool) {
	pos, code, ok = parseFlags(fs, args)
	if !ok {
		return nil, nil, code, false
	}
	if !wantArgs(fs, pos, lo, hi) {
		return nil, nil, exitUsage, false
	}
	r, err := f.open()
	if err != nil {
		fmt.Fprintf(stderr, "xmlpipe %s: %v\n", fs.Name(), err)
		return nil, nil, exitFailure, false
	}
	return pos, r, 0, true
}

// closeStore closes r, reporting a failure on stderr.
func closeStore(r *store.Reader, stderr io.Writer) {
	if err := r.Close(); err != nil {
		fmt.Fprintln(stderr, "xmlpipe journal: close store:", err)
	}
}
