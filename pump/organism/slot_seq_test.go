package organism

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestSlotSeqSurvivesARestart: the journal seq a history slot records
// (registry.Slot.Seq: which message's handling recorded it) is persisted
// and restored with the slot, so an agent handling a message again after a
// restart finds exactly its own slot and step.
func TestSlotSeqSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	_, _, sink := StateSinks(s, log)
	at := time.Unix(0, 1).UTC()
	for i, seq := range []int64{7, 7, 9} {
		sink.SlotAppended(registry.Slot{ThreadID: "t", Index: i, From: "console", To: "bot", PayloadType: "Task",
			Raw: []byte("<Task/>"), Time: at, OwnName: "bot", Seq: seq})
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = store.Open(dir, store.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cb, err := registry.NewContextBuffer(registry.ContextConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := &storeSinks{s: s, log: log}
	if _, _, err := k.restoreHistories(cb); err != nil {
		t.Fatal(err)
	}
	var got []int64
	if tc, ok := cb.Thread("t"); ok {
		for _, sl := range tc.Slots() {
			got = append(got, sl.Seq)
		}
	}
	if diff := cmp.Diff([]int64{7, 7, 9}, got); diff != "" {
		t.Errorf("restored slots' seqs (-want +got):\n%s", diff)
	}
}
