package organism

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestEnteredHopsSurviveRestart: the hops a conversation begun by a peer
// organism's call made before it came reach the store through the thread
// sink and come back with the threads at the next start, so
// max_chain_depth goes on counting them.
func TestEnteredHopsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sink, _, _ := StateSinks(st, nil)
	threads := registry.NewThreads(registry.ThreadsConfig{Organism: "b", Sink: sink})
	root := uuid.NewString()
	if _, _, _, err := threads.JoinAsAt(root, "a", "ping", "", 12); err != nil {
		t.Fatal(err)
	}
	child, err := threads.Extend(root, "pong")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := &storeSinks{s: st, log: slog.New(slog.DiscardHandler)}
	restored := registry.NewThreads(registry.ThreadsConfig{Organism: "b"})
	if err := k.restoreThreads(restored); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{root: 13, child: 14} {
		if got, ok := restored.Hops(id); !ok || got != want {
			t.Errorf("thread %s after the restart: %d hops (live %v), want %d", id, got, ok, want)
		}
	}
}
