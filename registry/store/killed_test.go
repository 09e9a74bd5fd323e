package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestKillRecordSurvivesReopen: a recorded kill is committed when
// RecordKill returns, reads back after the store is closed and opened
// again (and from a read-only reader beside it), keeps its first record
// when recorded twice, and names no other conversation.
func TestKillRecordSurvivesReopen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	s := openAt(t, dir, Options{})
	if ok, err := s.Killed("conv-a"); ok || err != nil {
		t.Fatalf("Killed before any kill = %v, %v; want false, nil", ok, err)
	}
	at := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	if err := s.RecordKill(ctx, Kill{Conversation: "conv-a", At: at}); err != nil {
		t.Fatalf("RecordKill: %v", err)
	}
	if err := s.RecordKill(ctx, Kill{Conversation: "conv-a", At: at.Add(time.Hour)}); err != nil {
		t.Fatalf("second RecordKill: %v", err)
	}
	if err := s.RecordKill(ctx, Kill{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("RecordKill without a conversation = %v, want ErrInvalid", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, dir, Options{})
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct {
		conv string
		want bool
	}{{"conv-a", true}, {"conv-b", false}, {"", false}} {
		got, err := s.Killed(tc.conv)
		if err != nil || got != tc.want {
			t.Errorf("Store.Killed(%q) after reopen = %v, %v; want %v", tc.conv, got, err, tc.want)
		}
		if got, err := r.Killed(tc.conv); err != nil || got != tc.want {
			t.Errorf("Reader.Killed(%q) = %v, %v; want %v", tc.conv, got, err, tc.want)
		}
	}
	k, err := r.KillOf("conv-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Kill{Conversation: "conv-a", At: at}, k); diff != "" {
		t.Errorf("KillOf (-want +got):\n%s", diff)
	}
}
