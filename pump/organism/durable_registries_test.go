package organism_test

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestDurableRegistries: the registries DurableRegistries builds persist
// their changes to the store and, built again over the same store, start
// from what was persisted: the thread begun is known, with its history,
// the thread ended is not.
func TestDurableRegistries(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	kept, ended := uuid.NewString(), uuid.NewString()
	open := func() (*store.Store, *registry.Threads, *registry.ContextBuffer) {
		t.Helper()
		st, err := store.Open(dir, store.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		threads, _, cb, err := organism.DurableRegistries(st, quiet, registry.ThreadsConfig{Organism: "org"},
			registry.ContextConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return st, threads, cb
	}
	st, threads, cb := open()
	for _, id := range []string{kept, ended} {
		if err := threads.Begin(id, "client", "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := cb.AppendShared(registry.Slot{ThreadID: id, From: "client", To: "a", PayloadType: "Greeting",
			Raw: []byte("<Greeting/>")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := threads.End(ended); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, threads, cb = open()
	defer st.Close()
	got := map[string]bool{"kept": threads.Known(kept), "ended": threads.Known(ended)}
	if d := cmp.Diff(map[string]bool{"kept": true, "ended": false}, got); d != "" {
		t.Errorf("threads known after a restart (-want +got):\n%s", d)
	}
	if !cb.ThreadExists(kept) {
		t.Error("the kept thread's history is not restored")
	}
}
