package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestJournalCommands: a console session journals its conversation on the
// data directory; tail, thread, verify and export read it back.
func TestJournalCommands(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "state")
	if r := runBinary(t, dir, "@greeter Dan\n/quit\n", "console", "organism.yaml", "--data", data); r.code != 0 ||
		!strings.Contains(r.stdout, "[shouter] HELLO, DAN!") {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	tail := runBinary(t, dir, "", "journal", "tail", "-n", "10", "--data", data)
	if tail.code != 0 {
		t.Fatalf("tail: exit %d: %s", tail.code, tail.stderr)
	}
	conv := regexp.MustCompile(`inbound\s+message\s+console → greeter \[Greeting\] thread=([0-9a-f-]{36})`).FindStringSubmatch(tail.stdout)
	if conv == nil {
		t.Fatalf("tail lacks the console's greeting:\n%s", tail.stdout)
	}

	th := runBinary(t, dir, "", "journal", "thread", conv[1], "--data", data)
	if th.code != 0 {
		t.Fatalf("thread: exit %d: %s", th.code, th.stderr)
	}
	for _, want := range []string{"inbound message console → greeter", "outbound message greeter → shouter",
		"outbound message shouter → response-handler", "<Name>Dan</Name>", "<Message>HELLO, DAN!</Message>"} {
		if !strings.Contains(th.stdout, want) {
			t.Errorf("thread output lacks %q:\n%s", want, th.stdout)
		}
	}
	if r := runBinary(t, dir, "", "journal", "thread", "00000000-0000-4000-8000-000000000000", "--data", data); r.code != 1 {
		t.Errorf("thread of an unknown id: exit %d, want 1", r.code)
	}

	v := runBinary(t, dir, "", "journal", "verify", "--data", data)
	if v.code != 0 || !strings.Contains(v.stdout, "journal OK") {
		t.Fatalf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}

	out := filepath.Join(dir, "export")
	if r := runBinary(t, dir, "", "journal", "export", "--out", out, "--data", data); r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	doc, err := os.ReadFile(filepath.Join(out, conv[1]+".xml"))
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		ID      string `xml:"id,attr"`
		Entries []struct {
			Direction string `xml:"direction,attr"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(doc, &parsed); err != nil {
		t.Fatalf("export is not XML: %v\n%s", err, doc)
	}
	if parsed.ID != conv[1] || len(parsed.Entries) == 0 || parsed.Entries[0].Direction != "inbound" {
		t.Fatalf("export = %+v", parsed)
	}
}

// TestJournalDefaultDataDir: without --data, console and journal use
// organism.data_dir (data beside the config); unknown subcommands are usage errors.
func TestJournalDefaultDataDir(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "data")
	if r := runBinary(t, dir, "@greeter Dan\n/quit\n", "console", "organism.yaml"); r.code != 0 {
		t.Fatalf("console: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "xmlpipe.db")); err != nil {
		t.Fatalf("default data dir not used: %v", err)
	}
	if r := runBinary(t, dir, "", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify with the default data dir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, dir, "", "journal", "nope"); r.code != 2 {
		t.Fatalf("unknown journal command: exit %d, want 2", r.code)
	}
}
