package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runIn runs `xmlpipe args…` in-process and returns what it produced.
func runIn(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, streams{strings.NewReader(""), &out, &errOut})
	return result{code, out.String(), errOut.String()}
}

// listsEveryCommand fails unless usage has a line for every command.
func listsEveryCommand(t *testing.T, usage string) {
	t.Helper()
	for _, c := range commands() {
		if !regexp.MustCompile(`(?m)^  ` + c.name + ` +\S.*\S$`).MatchString(usage) {
			t.Errorf("usage lacks a line for %s:\n%s", c.name, usage)
		}
	}
}

// The top-level help, however it is asked for, is the command list on
// stdout (exit 0); the binary's own flags work the same.
func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}, {"help", "help"}, {"help", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runBinary(t, ".", "", args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			listsEveryCommand(t, r.stdout)
		})
	}
}

// Every command prints its usage on stdout, exit 0, for -h, --help and
// `xmlpipe help <command>`, headed by its summary.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands() {
		if c.name == "help" {
			continue
		}
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				r := runIn(t, args...)
				if r.code != 0 || r.stderr != "" {
					t.Fatalf("exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
				}
				if !strings.HasPrefix(r.stdout, "xmlpipe "+c.name+": "+c.summary+"\n") ||
					!strings.Contains(r.stdout, "usage: xmlpipe "+c.name) {
					t.Errorf("help of %s:\n%s", c.name, r.stdout)
				}
				for line := range strings.Lines(r.stdout) {
					if strings.HasSuffix(strings.TrimSuffix(line, "\n"), " ") {
						t.Errorf("help of %s: a line ends in a space: %q", c.name, line)
					}
				}
			})
		}
	}
}

func TestSubcommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"help", "users", "add"}, "-password-stdin"},
		{[]string{"users", "add", "-h"}, "-password-stdin"},
		{[]string{"users", "passwd", "--help"}, "usage: xmlpipe users passwd"},
		{[]string{"help", "journal", "replay"}, "-into"},
		{[]string{"journal", "tail", "-h"}, "-config"},
		{[]string{"help", "keys", "export"}, "usage: xmlpipe keys export FILE"},
		{[]string{"wasm", "check", "-h"}, "-memory-mb"},
		{[]string{"help", "wasm"}, "memory cap to check the module against"},
		{[]string{"wasm", "-h"}, "memory cap to check the module against"},
		{[]string{"ctl", "-h"}, "OPERATION"},
		{[]string{"run", "--data", "x", "-h"}, "-listen"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runIn(t, tt.args...)
			if r.code != 0 || !strings.Contains(r.stdout, tt.want) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant %q on stdout", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}

func TestHelpErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage: xmlpipe <command>"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"users", "frobnicate", "-h"}, "usage: xmlpipe users <command>"},
		{[]string{"users", "frobnicate"}, `xmlpipe users: unknown command "frobnicate"`},
		{[]string{"journal", "frobnicate"}, `xmlpipe journal: unknown command "frobnicate"`},
		{[]string{"keys", "frobnicate"}, `xmlpipe keys: unknown command "frobnicate"`},
		{[]string{"wasm", "frobnicate"}, `xmlpipe wasm: unknown command "frobnicate"`},
		{[]string{"journal"}, "usage: xmlpipe journal <command>"},
		{[]string{"run", "a.yaml", "b.yaml"}, `xmlpipe run: unexpected argument "b.yaml"`},
		{[]string{"journal", "tail", "5"}, `xmlpipe journal tail: unexpected argument "5"`},
		{[]string{"journal", "thread"}, "xmlpipe journal thread: missing argument\nusage: xmlpipe journal thread <uuid>"},
		{[]string{"users", "remove", "a", "b"}, `xmlpipe users remove: unexpected argument "b"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runIn(t, tt.args...)
			out := r.stdout + r.stderr
			if r.code != exitUsage || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", r.code, out, tt.want)
			}
		})
	}
}

// One flag names the configuration everywhere: --config, with --organism
// as its alias; commands whose configuration is their argument take it too,
// but not both at once.
func TestConfigFlagAliases(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aliased.yaml")
	sock := filepath.Join(dir, "oob.sock")
	doc := strings.Replace(string(defaultOrganism), "organism:\n", "organism:\n  data_dir: mydata\n", 1) +
		"oob:\n  unix_socket: " + sock + "\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "data_dir: mydata") {
		t.Fatalf("the test organism has no data_dir:\n%s", doc)
	}
	keysDir := filepath.Join(dir, "mydata", "keys")
	for _, flag := range []string{"--config", "--organism", "-config", "-organism"} {
		t.Run(flag, func(t *testing.T) {
			if r := runIn(t, "validate", flag, cfg); r.code != 0 || !strings.Contains(r.stdout, "organism hello-world") {
				t.Errorf("validate %s: exit %d\n%s%s", flag, r.code, r.stdout, r.stderr)
			}
			if r := runIn(t, "keys", "init", flag, cfg); r.code != 0 || !strings.Contains(r.stdout, keysDir) {
				t.Errorf("keys init %s: exit %d\n%s%s", flag, r.code, r.stdout, r.stderr)
			}
			if r := runIn(t, "ctl", flag, cfg, "get-status"); r.code != 1 || !strings.Contains(r.stderr, sock) {
				t.Errorf("ctl %s: exit %d, want 1 naming the configured socket %s\n%s", flag, r.code, sock, r.stderr)
			}
			if r := runIn(t, "users", "list", flag, cfg); r.code != 0 {
				t.Errorf("users list %s: exit %d\n%s", flag, r.code, r.stderr)
			}
			if r := runIn(t, "journal", "tail", flag, cfg); r.code != 0 {
				t.Errorf("journal tail %s: exit %d\n%s", flag, r.code, r.stderr)
			}
			if r := runIn(t, "route", flag, cfg, "shout a message"); r.code != 0 || !strings.Contains(r.stdout, "shouter") {
				t.Errorf("route %s: exit %d, want the ranked listeners\n%s%s", flag, r.code, r.stdout, r.stderr)
			}
			if r := runIn(t, "check", flag, cfg, filepath.Join("testdata", "wrong-target.xml")); !strings.Contains(r.stdout+r.stderr, "shouter takes <GreetingResponse>, not <Greeting>") {
				t.Errorf("check %s: exit %d, want the routing stage\n%s%s", flag, r.code, r.stdout, r.stderr)
			}
		})
	}
	if r := runIn(t, "validate", "--config", cfg, cfg); r.code != exitUsage || !strings.Contains(r.stderr, "named twice") {
		t.Errorf("validate with --config and an argument: exit %d\n%s", r.code, r.stderr)
	}
	if r := runIn(t, "route", "--config", cfg, "shout a message", cfg); r.code != exitUsage || !strings.Contains(r.stderr, "named twice") {
		t.Errorf("route with --config and an argument: exit %d\n%s", r.code, r.stderr)
	}
}
