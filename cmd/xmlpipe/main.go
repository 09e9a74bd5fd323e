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
//	xmlpipe users add|list|remove|reset-totp|passwd|role [--data DIR] …
//	xmlpipe keys init|show|export [--data DIR] [--organism FILE]
//	xmlpipe ctl [--data DIR] [--organism FILE] OPERATION [flags] | watch [THREAD] | graph --format F
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
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
		{"ctl", "[--data DIR] [--organism FILE] OPERATION …", "send one signed request to the running organism's OOB channel", runCtl},
		{"help", "", "show this help", runHelp},
	}
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], streams{os.Stdin, os.Stdout, os.Stderr}))
}

// run dispatches to the subcommand named by args[0].
func run(ctx context.Context, args []string, std streams) int {
	if len(args) == 0 {
		usage(std.err)
		return exitUsage
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], std)
		}
	}
	fmt.Fprintf(std.err, "xmlpipe: unknown command %q\n\n", args[0])
	usage(std.err)
	return exitUsage
}

func runHelp(_ context.Context, _ []string, std streams) int {
	usage(std.out)
	return exitOK
}

// usage lists every command with one line each.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: xmlpipe <command> [arguments]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s %-34s %s\n", c.name, c.args, c.summary)
	}
	b.WriteString("\nWithout organism.yaml, ./organism.yaml is used, else the embedded hello-world organism.\n" +
		"Run xmlpipe <command> -h for the flags of a command.\n")
	_, _ = io.WriteString(w, b.String())
}
