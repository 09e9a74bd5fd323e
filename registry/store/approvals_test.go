package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestApprovalsLifecycle(t *testing.T) {
	s, dir := openTest(t, Options{})
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 0).UTC()
	a := ApprovalRow{ID: "a1", Seq: 7, Conversation: "c1", Thread: "t1", Agent: "researcher", Target: "run_command",
		Kind: "tool", Payload: "<message/>", RequestReason: "approval: [run_command]", Rules: []string{"r1", "r2"}, Suggestion: "s", Severity: "high",
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), Status: ApprovalPending}
	if err := s.PutApproval(a); err != nil {
		t.Fatal(err)
	}
	b := a
	b.ID, b.Thread, b.Conversation, b.CreatedAt = "a2", "t2", "c2", at.Add(time.Second)
	if err := s.PutApproval(b); err != nil {
		t.Fatal(err)
	}
	dup := a
	dup.Agent = "someone else"
	if err := s.PutApproval(dup); err != nil { // kept as first stored
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Approvals(ctx, ApprovalFilter{Status: ApprovalPending})
	if err != nil || len(got) != 2 || got[0].ID != "a2" || got[1].ID != "a1" {
		t.Fatalf("pending = %+v, %v", got, err)
	}
	if g := got[1]; g.Agent != "researcher" || g.Seq != 7 || len(g.Rules) != 2 || g.Suggestion != "s" || g.Severity != "high" || !g.CreatedAt.Equal(at) ||
		!g.ExpiresAt.Equal(at.Add(time.Hour)) || !g.DecidedAt.IsZero() {
		t.Fatalf("row %+v", g)
	}
	if got, _ := s.Approvals(ctx, ApprovalFilter{Thread: "c2"}); len(got) != 1 || got[0].ID != "a2" {
		t.Fatalf("by conversation: %+v", got)
	}
	if err := s.DecideApproval(ctx, "a1", ApprovalApproved, "alice", "fine", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.DecideApproval(ctx, "a1", ApprovalDenied, "bob", "no", at); !errors.Is(err, ErrDecided) {
		t.Fatalf("second decision: %v", err)
	}
	if err := s.DecideApproval(ctx, "nope", ApprovalDenied, "bob", "no", at); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if err := s.DecideApproval(ctx, "a2", ApprovalPending, "bob", "", at); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad status: %v", err)
	}
	if err := s.PutApproval(ApprovalRow{ID: "x", Kind: "tool", Status: "maybe", CreatedAt: at}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad row: %v", err)
	}
	// A restart keeps everything.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir, Options{})
	got, err = s.Approvals(ctx, ApprovalFilter{ID: "a1"})
	if err != nil || len(got) != 1 || got[0].Status != ApprovalApproved || got[0].DecidedBy != "alice" ||
		got[0].Reason != "fine" || !got[0].DecidedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	if got, _ := s.Approvals(ctx, ApprovalFilter{Limit: 1}); len(got) != 1 || got[0].ID != "a2" {
		t.Fatalf("limit: %+v", got)
	}
}
