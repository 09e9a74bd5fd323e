package organism

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestStoreJournalThreadOrigin: the origin of journaled threads, before
// and after the store is opened again (its filter of journaled thread ids
// loaded from the database, store.Store.MayHaveThread), and of one never
// journaled.
func TestStoreJournalThreadOrigin(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	j := StoreJournal(s, slog.New(slog.DiscardHandler)).(pump.ThreadHistory)
	root, child, orphan := uuid.NewString(), uuid.NewString(), uuid.NewString()
	env := []byte(`<message/>`)
	now := time.Now()
	for _, r := range []pump.Record{
		{Time: now, Direction: pump.Inbound, Kind: pump.RecordMessage, Conversation: root, Thread: root,
			From: "websocket:alice", To: "greeter", Listener: "greeter", PayloadTag: "Greeting", Envelope: env},
		{Time: now, Direction: pump.Outbound, Kind: pump.RecordMessage, Conversation: root, Thread: child,
			From: "greeter", To: "shouter", Listener: "shouter", PayloadTag: "GreetingResponse", Envelope: env},
		// A child whose root left no entry (pruned, say).
		{Time: now, Direction: pump.Outbound, Kind: pump.RecordMessage, Conversation: uuid.NewString(), Thread: orphan,
			From: "greeter", To: "shouter", Listener: "shouter", PayloadTag: "GreetingResponse", Envelope: env},
	} {
		j.(pump.Journal).Record(r)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, thread, origin string
		seen                 bool
	}{
		{"root", root, "websocket:alice", true},
		{"child", child, "websocket:alice", true},
		{"root without entries", orphan, "", true},
		{"never journaled", uuid.NewString(), "", false},
	}
	check := func(t *testing.T, j pump.ThreadHistory) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				origin, seen, err := j.ThreadOrigin(tt.thread)
				if err != nil || origin != tt.origin || seen != tt.seen {
					t.Errorf("ThreadOrigin = %q, %v, %v; want %q, %v", origin, seen, err, tt.origin, tt.seen)
				}
			})
		}
	}
	t.Run("open", func(t *testing.T) { check(t, j) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = store.Open(dir, store.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Run("reopened", func(t *testing.T) { check(t, StoreJournal(s, slog.New(slog.DiscardHandler)).(pump.ThreadHistory)) })
}
