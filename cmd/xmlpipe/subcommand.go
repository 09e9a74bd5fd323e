package main

import "fmt"

// subcommandUsage answers a group command (journal, users, keys, wasm)
// called without a subcommand or with one it does not know: it names the
// unknown one, as the top level does, then prints the group's usage on
// stderr, and returns exitUsage.
func subcommandUsage(std streams, group, usage string, args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(std.err, "xmlpipe %s: unknown command %q\n\n", group, args[0])
	}
	fmt.Fprintln(std.err, usage)
	return exitUsage
}
