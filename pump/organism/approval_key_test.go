package organism

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// computableID is how approval ids were made before the secret: anyone who
// knew (or counted) the journal seq of a held message had its id.
func computableID(seq int64, target string) string {
	h := sha256.Sum256([]byte(strconv.FormatInt(seq, 10) + "\x00" + target))
	return hex.EncodeToString(h[:6])
}

// TestApprovalIDsCannotBeComputed: the id of a held call's approval is not
// a function of what others know (its seq and target), differs between
// organisms, and the secret it comes from is the owner's alone.
func TestApprovalIDsCannotBeComputed(t *testing.T) {
	var ids []Approval
	for range 2 {
		m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "done"}})
		dir := t.TempDir()
		o := agentOrganismWith(t, m, governed, Options{DataDir: dir})
		startConversation(t, o, "researcher", "what day is it?")
		a := pendingApproval(t, o)
		if a.Seq <= 0 {
			t.Fatalf("held approval without seq: %+v", a)
		}
		if a.ID == computableID(a.Seq, "run_command") {
			t.Fatalf("approval id %s is sha256(seq %d, target)", a.ID, a.Seq)
		}
		if len(a.ID) != 12 {
			t.Fatalf("approval id %q: want 12 hex digits", a.ID)
		}
		st, err := os.Stat(filepath.Join(dir, approvalKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 || st.Size() != approvalKeySize {
			t.Fatalf("%s: mode %v size %d", approvalKeyFile, st.Mode().Perm(), st.Size())
		}
		ids = append(ids, a)
	}
	if ids[0].Seq == ids[1].Seq && ids[0].ID == ids[1].ID {
		t.Fatalf("two organisms gave the message of seq %d the same approval id %s", ids[0].Seq, ids[0].ID)
	}
}

// TestLegacyApprovalIDsStillFound: an approval a data directory kept
// under the id of an earlier release is found again for its held message
// (and only for that message).
func TestLegacyApprovalIDsStillFound(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{})
	o := agentOrganismWith(t, m, governed, Options{DataDir: t.TempDir()})
	g := o.Governance()
	now := time.Now()
	legacy := Approval{ID: computableID(7, "run_command"), Kind: KindTool, Seq: 7, Agent: "researcher",
		Target: "run_command", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Status: StatusPending}
	if err := g.book.add(legacy, g.expire); err != nil {
		t.Fatal(err)
	}
	a, found, err := g.heldApproval(t.Context(), 7, "Run_Command")
	if err != nil || !found || a.ID != legacy.ID {
		t.Fatalf("legacy approval: %+v %v %v", a, found, err)
	}
	if !g.awaits(7, "run_command") {
		t.Fatal("the held message of a legacy approval is not re-delivered")
	}
	if _, found, _ := g.heldApproval(t.Context(), 8, "run_command"); found {
		t.Fatal("another message found the legacy approval")
	}
}

// TestApprovalKeyDamagedStopsTheStart: a secret file of the wrong size is
// an error saying what to do, not silently replaced (which would orphan
// the approvals pending under it).
func TestApprovalKeyDamagedStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, approvalKeyFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadApprovalIDs(dir); err == nil {
		t.Fatal("a damaged secret was accepted")
	}
	fresh := t.TempDir()
	a, err := loadApprovalIDs(fresh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadApprovalIDs(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if a.held(3, "x") != b.held(3, "x") {
		t.Fatal("the secret changed between two loads")
	}
}

// TestApprovalVisibleTo: a memory consent approval is its conversation
// owner's and admins'; every other kind is anyone's.
func TestApprovalVisibleTo(t *testing.T) {
	for _, tc := range []struct {
		kind, owner, user string
		admin, want       bool
	}{
		{KindMemory, "alice", "alice", false, true},
		{KindMemory, "alice", "olga", false, false},
		{KindMemory, "alice", "olga", true, true},
		{KindMemory, "", "", false, false}, // the organism's own traffic: no user owns it
		{KindMemory, "", "olga", true, true},
		{KindTool, "alice", "olga", false, true},
		{KindReview, "", "olga", false, true},
	} {
		a := Approval{Kind: tc.kind, User: tc.owner}
		if got := a.VisibleTo(tc.user, tc.admin); got != tc.want {
			t.Errorf("%s of %q to %q (admin %v): %v, want %v", tc.kind, tc.owner, tc.user, tc.admin, got, tc.want)
		}
	}
}

// TestApprovalsListedForAViewer: a listing for a viewer keeps another
// user's memory consent out — with a store (in its query) and without.
func TestApprovalsListedForAViewer(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "durable"}[durable], func(t *testing.T) {
			opts := Options{}
			if durable {
				opts.DataDir = t.TempDir()
			}
			o := agentOrganismWith(t, newScriptedModel(t, map[string][]string{}), governed, opts)
			g := o.Governance()
			now := time.Now()
			for _, a := range []Approval{
				{ID: "mem-alice", Kind: KindMemory, Agent: "researcher", User: "alice"},
				{ID: "tool-alice", Kind: KindTool, Agent: "researcher", User: "alice"},
			} {
				a.CreatedAt, a.ExpiresAt, a.Status = now, now.Add(time.Hour), StatusPending
				if err := g.book.add(a, g.expire); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				viewer *ApprovalViewer
				want   int
			}{
				{nil, 2},
				{&ApprovalViewer{User: "alice"}, 2},
				{&ApprovalViewer{User: "olga"}, 1},
				{&ApprovalViewer{User: "olga", Admin: true}, 2},
			} {
				as, err := g.Approvals(t.Context(), ApprovalFilter{Status: StatusPending, Viewer: tc.viewer})
				if err != nil {
					t.Fatal(err)
				}
				if len(as) != tc.want {
					t.Errorf("viewer %+v: %d approvals, want %d", tc.viewer, len(as), tc.want)
				}
			}
		})
	}
}
