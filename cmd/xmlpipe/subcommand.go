package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// subcommandUsage answers a group command (journal, users, keys, wasm)
// called without a subcommand or with one it does not know: it names the
// unknown one, as the top level does, with the one of names it was
// probably meant to be, then prints the group's usage on stderr, and
// returns exitUsage.
func subcommandUsage(std streams, group, usage string, names []string, args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(std.err, "xmlpipe %s: unknown command %q%s\n\n", group, args[0], config.Suggest(args[0], names))
	}
	fmt.Fprintln(std.err, usage)
	return exitUsage
}

// commandNames are the keys of a group's subcommand table, sorted.
func commandNames[F any](m map[string]F) []string {
	return slices.Sorted(maps.Keys(m))
}
