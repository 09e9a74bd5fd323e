package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestJournalBackup: `xmlpipe journal backup DIR` copies the data
// directory of a running organism (its store open and locked) into a
// fresh directory that journal verify passes and that holds every entry
// committed before; a target that is not empty is refused.
func TestJournalBackup(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	s, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var last int64
	for i := range 50 {
		last, err = s.AppendSync(ctx, store.Entry{Thread: "t", Conversation: "c", Direction: store.Inbound, Kind: store.Message,
			From: "console", To: "greeter", Listener: "greeter", PayloadTag: "Greeting",
			Bytes: []byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>console</from><thread>t</thread></meta><Greeting><Name>n` + strings.Repeat("x", i) + `</Name></Greeting></message>`)})
		if err != nil {
			t.Fatal(err)
		}
	}

	out := filepath.Join(t.TempDir(), "backup")
	r := runIn(t, "journal", "backup", "--data", data, out)
	if r.code != exitOK || !strings.Contains(r.stdout, "journal up to seq") {
		t.Fatalf("journal backup beside a running organism: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := runIn(t, "journal", "verify", "--data", out); v.code != exitOK || !strings.Contains(v.stdout, "journal OK") {
		t.Fatalf("verify of the backup: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	b, err := store.OpenReadOnly(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := b.LastSeq(); err != nil || got != last {
		t.Errorf("the backup's last seq: %d, %v; want %d", got, err, last)
	}

	if r := runIn(t, "journal", "backup", "--data", data, out); r.code != exitFailure || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("backup into a non-empty directory: exit %d, stderr %q; want 1 saying it is not empty", r.code, r.stderr)
	}
	if r := runIn(t, "journal", "backup", "--data", data); r.code != exitUsage {
		t.Errorf("backup without a target: exit %d, want %d", r.code, exitUsage)
	}
}
