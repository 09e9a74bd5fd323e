package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCallUsageEstimated: a call's usage_estimated mark is kept with it; a
// database written before the column existed reads its calls unmarked —
// through a read-only reader (xmlpipe journal) before any Open migrated
// it, and after the next Open, which adds the column.
func TestCallUsageEstimated(t *testing.T) {
	s, dir := openTest(t, Options{})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	measured := CallRow{Time: at, Thread: "conv", Conversation: "conv", Backend: "local", Attempt: 1,
		PromptTokens: 11, CompletionTokens: 7, FinishReason: "stop"}
	estimated := CallRow{Time: at, Thread: "conv", Conversation: "conv", Backend: "local", Attempt: 1,
		PromptTokens: 360, CompletionTokens: 3, FinishReason: "aborted", Error: "context canceled", UsageEstimated: true}
	for _, c := range []CallRow{measured, estimated} {
		_, err := s.AppendCall(c)
		must(t, err)
	}
	must(t, s.Flush(context.Background()))
	got, err := s.Calls(CallFilter{})
	must(t, err)
	measured.ID, estimated.ID = 1, 2
	if d := cmp.Diff([]CallRow{measured, estimated}, got); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	must(t, s.Close())

	// A database of a binary that did not keep the mark.
	db := rawDB(t, dir)
	if _, err := db.Exec(`ALTER TABLE llm_calls DROP COLUMN usage_estimated`); err != nil {
		t.Fatal(err)
	}
	must(t, db.Close())
	estimated.UsageEstimated = false
	want := []CallRow{measured, estimated}
	r, err := OpenReadOnly(dir)
	must(t, err)
	got, err = r.Calls(CallFilter{})
	must(t, err)
	must(t, r.Close())
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("calls read-only before the migration (-want +got):\n%s", d)
	}

	s = openAt(t, dir, Options{})
	third := CallRow{Time: at, Thread: "conv", Conversation: "conv", Backend: "local", Attempt: 2, UsageEstimated: true}
	_, err = s.AppendCall(third)
	must(t, err)
	must(t, s.Flush(context.Background()))
	got, err = s.Calls(CallFilter{})
	must(t, err)
	third.ID = 3
	if d := cmp.Diff(append(want, third), got); d != "" {
		t.Errorf("calls after the migration (-want +got):\n%s", d)
	}
}
