package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApprovalOwnerKeptAndFiltered: an approval's owner is kept with it; a
// database written before the column existed gets it at its next Open, its
// rows nobody's; PrivateKinds keeps of those kinds only the owner's.
func TestApprovalOwnerKeptAndFiltered(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	db := rawDB(t, dir)
	for _, q := range []string{
		`ALTER TABLE approvals DROP COLUMN owner`,
		`INSERT INTO approvals (id, agent, kind, created_at, status) VALUES ('old', 'assistant', 'memory', 1, 'pending')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())

	s = openAt(t, dir, Options{})
	at := time.Unix(0, 2).UTC()
	for _, r := range []ApprovalRow{
		{ID: "alice-mem", Agent: "assistant", Kind: "memory", Owner: "alice"},
		{ID: "bob-mem", Agent: "assistant", Kind: "memory", Owner: "bob"},
		{ID: "bob-tool", Agent: "researcher", Kind: "tool", Owner: "bob"},
	} {
		r.CreatedAt, r.Status = at, ApprovalPending
		must(t, s.PutApproval(r))
	}
	must(t, s.Flush(context.Background()))
	must(t, s.Close())

	s = openAt(t, dir, Options{})
	ids := func(f ApprovalFilter) map[string]string {
		rows, err := s.Approvals(context.Background(), f)
		must(t, err)
		out := map[string]string{}
		for _, r := range rows {
			out[r.ID] = r.Owner
		}
		return out
	}
	if d := cmp.Diff(map[string]string{"old": "", "alice-mem": "alice", "bob-mem": "bob", "bob-tool": "bob"},
		ids(ApprovalFilter{})); d != "" {
		t.Errorf("every approval (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"alice-mem": "alice", "bob-tool": "bob"},
		ids(ApprovalFilter{PrivateKinds: []string{"memory"}, Owner: "alice"})); d != "" {
		t.Errorf("alice's view (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"bob-tool": "bob"},
		ids(ApprovalFilter{PrivateKinds: []string{"memory"}})); d != "" {
		t.Errorf("nobody's view (-want +got):\n%s", d)
	}
}
