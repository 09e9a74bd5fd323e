// Command xmlpipe is the organism's one binary: the console, the headless
// runner, and tools to validate configurations, check and canonicalise
// messages and generate the payload schemas.
//
//	xmlpipe console [--verbose] [--serve] [organism.yaml] | --connect URL [--fingerprint F]
//	xmlpipe run [--log-level L] [--log-format text|json] [--listen ADDR] [--insecure-dev] [organism.yaml]
//	xmlpipe validate [organism.yaml]
//	xmlpipe check [--config organism.yaml] FILE|-
//	xmlpipe c14n FILE|-
//	xmlpipe gen [-out DIR] [-check]
//	xmlpipe bench [--duration 5s] [--json] | --bus [--clients 200] [--rate R]
//	xmlpipe journal tail|thread|verify|export|replay [--data DIR] [--config organism.yaml] …
//	xmlpipe mcp [--data DIR] [--http ADDR] [organism.yaml]
//	xmlpipe route [--profile P] [--agent A] [--limit N] [--fill] "need" [organism.yaml]
//	xmlpipe wasm check [--memory-mb N] module.wasm
//	xmlpipe users add|list|remove|reset-totp|passwd|role [--data DIR] [--config organism.yaml] …
//	xmlpipe keys init|show|export [--data DIR] [--config organism.yaml]
//	xmlpipe ctl [--data DIR] [--config organism.yaml] OPERATION [flags] | watch [THREAD] | graph --format F
//	xmlpipe version
//	xmlpipe help [command [subcommand]]
//
// The configuration is named by --config FILE everywhere (--organism is an
// alias); run, console, validate and mcp also take it as their argument.
// `xmlpipe help <command>`, or -h/--help after a command, prints the
// command's usage on stdout.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// streams are a command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// commandFunc runs one subcommand with its arguments and returns the exit code.
type commandFunc func(ctx context.Context, args []string, std streams) int

// command is one subcommand of the binary.
type command struct {
	// args is the command's synopsis; the command prints its full usage
	// itself (-h). summary is its line in the top-level usage.
	name, args, summary string
	run                 commandFunc
}

// commands lists the subcommands in usage order. It is a function because
// help lists it.
func commands() []command {
	return []command{
		{"console", "[--verbose] [--log-format text|json] [--data DIR] [--serve [--listen ADDR] [--insecure-dev]] [organism.yaml] | --connect URL [--fingerprint F]", "interactive console, in-process (optionally serving the bus) or attached to a running organism", runConsole},
		{"run", "[--log-level L] [--log-format text|json] [--data DIR] [--listen ADDR] [--insecure-dev] [organism.yaml]", "run an organism and serve its main bus (HTTPS+WSS) until SIGINT/SIGTERM; SIGHUP reloads in place", runRun},
		{"validate", "[organism.yaml]", "load and assemble an organism, print its routing table", runValidate},
		{"check", "[--config organism.yaml] FILE|-", "run one message through the ingress stages", runCheck},
		{"c14n", "FILE|-", "print the exclusive C14N of an XML document", runC14N},
		{"gen", "[-out DIR] [-check]", "write (or check) the generated payload schemas", runGen},
		{"bench", "[--duration 5s] [--json] | --bus [--clients 200] [--rate R]", "end-to-end pump benchmark (envelopes/s, latency, floor ratio), or with --bus the main bus's load generator", runBench},
		{"journal", "tail|thread|verify|export|replay [--data DIR] …", "read, check and replay the message journal", runJournal},
		{"mcp", "[--data DIR] [--http ADDR] [organism.yaml]", "serve the organism's listeners as MCP tools over stdio (or streamable HTTP)", runMCP},
		{"route", `[--profile P] [--agent A] [--limit N] [--fill] "need" [organism.yaml]`, "find the listeners that do what the need describes, ranked with their scores (semantic routing)", runRoute},
		{"wasm", "check [--memory-mb N] module.wasm", "check a WebAssembly listener module and print the schemas its describe export derives", runWasm},
		{"users", "add|list|remove|reset-totp|passwd|role …", "manage the main bus's users (password + TOTP)", runUsers},
		{"keys", "init|show|export [--data DIR] …", "the organism's Ed25519 identity and the owner's key pair", runKeys},
		{"ctl", "[--data DIR] [--config FILE] OPERATION …", "send one signed request to the running organism's OOB channel", runCtl},
		{"version", "", "print the version of xmlpipe, its commit, and the Go and libxml2 it runs on", runVersion},
		{"help", "[command [subcommand]]", "show this help, or a command's usage and flags", runHelp},
	}
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], streams{os.Stdin, os.Stdout, os.Stderr}))
}

// run dispatches to the subcommand named by args[0]. -h, -help or --help —
// alone, or among a command's arguments — print usage on stdout and exit 0.
func run(ctx context.Context, args []string, std streams) int {
	if len(args) == 0 {
		usage(std.err)
		return exitUsage
	}
	switch {
	case isHelpArg(args[0]):
		usage(std.out)
		return exitOK
	case args[0] == "--version" || args[0] == "-version":
		return runVersion(ctx, nil, std)
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(std.err, "xmlpipe: unknown command %q%s\n\n", args[0], config.Suggest(args[0], commandList()))
		usage(std.err)
		return exitUsage
	}
	if c.name != "help" && wantsHelp(args[1:]) {
		return commandHelp(ctx, c, args[1:], std)
	}
	return c.run(ctx, args[1:], std)
}

// commandList names every subcommand.
func commandList() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// lookupCommand finds the subcommand called name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// runHelp is `xmlpipe help [command [subcommand]]`.
func runHelp(ctx context.Context, args []string, std streams) int {
	if len(args) == 0 || isHelpArg(args[0]) || args[0] == "help" {
		usage(std.out)
		return exitOK
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(std.err, "xmlpipe help: unknown command %q%s\n\n", args[0], config.Suggest(args[0], commandList()))
		usage(std.err)
		return exitUsage
	}
	return commandHelp(ctx, c, append(args[1:len(args):len(args)], "-h"), std)
}

// commandHelp prints c's summary, then runs it with args (which ask for
// help) so that it prints its own usage and flags — on stdout: the usage a
// user asked for is output, not an error.
func commandHelp(ctx context.Context, c command, args []string, std streams) int {
	fmt.Fprintf(std.out, "xmlpipe %s: %s\n\n", c.name, c.summary)
	return c.run(ctx, args, streams{in: std.in, out: std.out, err: std.out})
}

// usage lists every command with its one-line summary.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("xmlpipe runs an organism: listeners that talk in XML envelopes, each repaired, canonicalised\n" +
		"and validated against the schema of its Go payload type before any handler sees it.\n\n" +
		"usage: xmlpipe <command> [arguments]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nThe configuration is organism.yaml given as an argument or with --config FILE (--organism is an\n" +
		"alias); without one, ./organism.yaml is used, else ./config/organism.yaml (the Python server's\n" +
		"default), else the embedded hello-world organism.\n" +
		"Run xmlpipe help <command> (or xmlpipe <command> -h) for a command's arguments and flags.\n")
	_, _ = io.WriteString(w, b.String())
}
