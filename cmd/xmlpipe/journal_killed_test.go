package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestJournalThreadSaysKilled: `xmlpipe journal thread` of a conversation
// the store records as killed ends with when it was killed — also for a
// thread of it that is not its root — and one never killed says nothing
// of it.
func TestJournalThreadSaysKilled(t *testing.T) {
	data := t.TempDir()
	s, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	killed, child, alive := stage.NewThreadID(), stage.NewThreadID(), stage.NewThreadID()
	for _, e := range []struct{ thread, conv string }{{killed, killed}, {child, killed}, {alive, alive}} {
		env := stage.AppendEnvelope(nil, "console", "greeter", e.thread, []byte(`<Greeting xmlns=""><Name>x</Name></Greeting>`))
		if _, err := s.AppendSeq(store.Entry{Thread: e.thread, Conversation: e.conv, Direction: store.Inbound,
			Kind: store.Message, From: "console", To: "greeter", Listener: "greeter", PayloadTag: "Greeting", Bytes: env}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 11, 28, 8, 30, 0, 0, time.UTC)
	if err := s.RecordKill(context.Background(), store.Kill{Conversation: killed, At: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	line := "killed at 2026-11-28T08:30:00Z: conversation " + killed + " ended for good"
	for _, tc := range []struct {
		thread string
		want   bool
	}{{killed, true}, {child, true}, {alive, false}} {
		r := runIn(t, "journal", "thread", tc.thread, "--data", data)
		if r.code != exitOK {
			t.Fatalf("journal thread %s: exit %d: %s", tc.thread, r.code, r.stderr)
		}
		if got := strings.Contains(r.stdout, line); got != tc.want {
			t.Errorf("journal thread %s says it was killed: %v, want %v\n%s", tc.thread, got, tc.want, r.stdout)
		}
	}
}
