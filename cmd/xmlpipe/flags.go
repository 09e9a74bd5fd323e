package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// newFlags returns a flag set for command name whose usage line is args.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(flagHint{stderr, fs})
	fs.Usage = func() {
		fmt.Fprintln(stderr, strings.TrimSpace("usage: xmlpipe "+name+" "+args))
		fs.PrintDefaults()
	}
	return fs
}

// flagHint is a flag set's output: it passes everything on to w, and
// completes the flag package's "flag provided but not defined: -conect"
// with the flag of fs it was probably meant to be ("(did you mean
// --connect?)").
type flagHint struct {
	w  io.Writer
	fs *flag.FlagSet
}

// undefinedFlag begins the flag package's report of an unknown flag.
const undefinedFlag = "flag provided but not defined: -"

func (h flagHint) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	name, ok := strings.CutPrefix(line, undefinedFlag)
	if !ok || strings.Contains(name, "\n") {
		return h.w.Write(p)
	}
	var names []string
	h.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if best := config.Nearest(name, names); best != "" {
		line += " (did you mean --" + best + "?)"
	}
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
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

// wantArgs checks the number of positional arguments; when it is wrong it
// says which (one missing, or the first unexpected one: a flag value given
// without its flag reads as one) before the command's usage.
func wantArgs(fs *flag.FlagSet, pos []string, lo, hi int) bool {
	switch {
	case len(pos) < lo:
		fmt.Fprintf(fs.Output(), "xmlpipe %s: missing argument\n", fs.Name())
	case len(pos) > hi:
		fmt.Fprintf(fs.Output(), "xmlpipe %s: unexpected argument %q\n", fs.Name(), pos[hi])
	default:
		return true
	}
	fs.Usage()
	return false
}

// dataFlag adds --data DIR: the data directory holding the store (default:
// organism.data_dir, i.e. data beside the configuration).
func dataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", "", "data directory of the store (default: organism.data_dir, data beside the config)")
}

// configFlag adds --config FILE, the organism.yaml a command works on, with
// --organism as its alias (the name keys and ctl once took). Every command
// names its configuration so; run, console, validate and mcp also take it as
// their positional argument (configPos).
func configFlag(fs *flag.FlagSet, usage string) *string {
	p := fs.String("config", "", usage)
	fs.StringVar(p, "organism", "", "alias of --config")
	return p
}

// configPos folds --config into the positional arguments of a command whose
// configuration is its optional positional argument: one of the two may name
// it, not both. It reports false (after printing why) when both do.
func configPos(fs *flag.FlagSet, pos []string, config string) ([]string, bool) {
	if config == "" {
		return pos, true
	}
	if len(pos) > 0 {
		fmt.Fprintf(fs.Output(), "xmlpipe %s: the configuration is named twice (--config %s and %s)\n", fs.Name(), config, pos[0])
		fs.Usage()
		return nil, false
	}
	return []string{config}, true
}

// isHelpArg reports whether arg asks for help (-h, -help, --help).
func isHelpArg(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelpArg(a) {
			return true
		}
	}
	return false
}
