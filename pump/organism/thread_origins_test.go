package organism

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestStoreJournalThreadOrigins: ThreadOrigins tells of many threads at
// once what ThreadOrigin tells of each — a root, a child (its root's
// origin), a child whose root left no entry (seen, no origin), one never
// journaled (absent) — across the lookup keys' partitions and the open one.
func TestStoreJournalThreadOrigins(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	j := StoreJournal(s, slog.New(slog.DiscardHandler)).(pump.ThreadHistories)
	env := []byte(`<message/>`)
	now := time.Now()
	var threads []string
	for i := range 1500 { // past the first partition of lookup keys
		root, child, orphan := uuid.NewString(), uuid.NewString(), uuid.NewString()
		for _, r := range []pump.Record{
			{Time: now, Direction: pump.Inbound, Kind: pump.RecordMessage, Conversation: root, Thread: root,
				From: "websocket:alice", To: "greeter", Listener: "greeter", PayloadTag: "Greeting", Envelope: env},
			{Time: now, Direction: pump.Outbound, Kind: pump.RecordMessage, Conversation: root, Thread: child,
				From: "greeter", To: "shouter", Listener: "shouter", PayloadTag: "GreetingResponse", Envelope: env},
			{Time: now, Direction: pump.Outbound, Kind: pump.RecordMessage, Conversation: uuid.NewString(), Thread: orphan,
				From: "greeter", To: "shouter", Listener: "shouter", PayloadTag: "GreetingResponse", Envelope: env},
		} {
			j.(pump.Journal).Record(r)
		}
		if i%100 == 0 || i == 1499 {
			threads = append(threads, root, child, orphan)
		}
	}
	threads = append(threads, uuid.NewString())
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, th := range threads {
		origin, seen, err := j.ThreadOrigin(th)
		if err != nil {
			t.Fatal(err)
		}
		if seen {
			want[th] = origin
		}
	}
	got, err := j.ThreadOrigins(threads)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ThreadOrigins differs from ThreadOrigin (-want +got):\n%s", diff)
	}
}
