package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlags returns a flag set for command name whose usage line is args.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: xmlpipe %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args allowing flags after positional arguments
// ("console organism.yaml --verbose"); "--" ends the flags. It returns the
// positional arguments, or the exit code when parsing ended the command
// (-h: 0, a bad flag: 2).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(fs *flag.FlagSet, pos []string, lo, hi int) bool {
	if len(pos) < lo || len(pos) > hi {
		fs.Usage()
		return false
	}
	return true
}

// dataFlag adds --data DIR: the data directory holding the store (default:
// organism.data_dir, i.e. data beside the configuration).
func dataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", "", "data directory of the store (default: organism.data_dir, data beside the config)")
}
