package registry

import (
	"testing"
	"unsafe"

	"github.com/google/uuid"
)

func TestNarrowProfile(t *testing.T) {
	for _, tc := range []struct{ parent, want, out string }{
		{"", "", ""},
		{"", "reader", "reader"},
		{"reader", "", "reader"},
		{"reader", "reader", "reader"},
		{"reader", "admin", "admin&reader"},
		{"admin&reader", "reader", "admin&reader"},
		{"Reader", " admin ", "admin&reader"},
		{"b&a", "", "a&b"},
		{"a&&b", "", "a&b"},
		{"", "&", ""},
		{"c", "b&a", "a&b&c"},
	} {
		if got := NarrowProfile(tc.parent, tc.want); got != tc.out {
			t.Errorf("NarrowProfile(%q, %q) = %q, want %q", tc.parent, tc.want, got, tc.out)
		}
	}
	if got := ProfileTerms("b&a&b"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("ProfileTerms = %q", got)
	}
	if ProfileTerms("") != nil {
		t.Error("ProfileTerms(\"\") is not empty")
	}
}

// TestProfileMonotonicity: a child thread asking for a wider profile gets
// the narrower one — its parent's terms stay in its name whatever it asks
// for (seed 000 §5.5) — and a thread keeps the profile it was created with.
func TestProfileMonotonicity(t *testing.T) {
	th := NewThreads(ThreadsConfig{Organism: "org"})
	root := uuid.NewString()
	got, created, prof, err := th.JoinAs(root, "websocket:alice", "researcher", "narrow")
	if err != nil || !created || got != root || prof != "narrow" {
		t.Fatalf("JoinAs = %q %v %q %v", got, created, prof, err)
	}
	// An unrestricted child is asked for: the child keeps its parent's.
	child, cp, err := th.ExtendAs(root, "calculate", "", "")
	if err != nil || cp != "narrow" {
		t.Fatalf("ExtendAs inherit = %q, %v", cp, err)
	}
	// A wider profile is asked for: the child gets the intersection.
	wide, wp, err := th.ExtendAs(child, "greeter", "", "everything")
	if err != nil || wp != "everything&narrow" {
		t.Fatalf("ExtendAs wider = %q, %v", wp, err)
	}
	// Extend and ExtendRef inherit.
	grand, err := th.ExtendRef(wide, "shouter", "ref-1")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := th.Profile(grand); !ok || p != "everything&narrow" {
		t.Errorf("Profile(grandchild) = %q %v", p, ok)
	}
	// A thread joined again keeps its profile, whatever the sender's is.
	if _, created, prof, err := th.JoinAs(root, "websocket:alice", "researcher", "admin"); err != nil || created || prof != "narrow" {
		t.Errorf("JoinAs again = %v %q %v", created, prof, err)
	}
	// The answer from a child travels under its reply thread's profile.
	caller, reply, ref, prof, err := th.CallerAs(grand)
	if err != nil || caller != "greeter" || reply != wide || ref != "ref-1" || prof != "everything&narrow" {
		t.Errorf("CallerAs(grand) = %q %q %q %q %v", caller, reply, ref, prof, err)
	}
	if _, reply, _, prof, err := th.CallerAs(root); err != nil || reply != root || prof != "narrow" {
		t.Errorf("CallerAs(root) = %q %q %v", reply, prof, err)
	}
	if _, ok := th.Profile(uuid.NewString()); ok {
		t.Error("Profile of an unknown thread is known")
	}
}

// TestProfileRecordsRestore: profiles survive Records → Restore, and a
// persisted child wider than its parent is narrowed on restore.
func TestProfileRecordsRestore(t *testing.T) {
	th := NewThreads(ThreadsConfig{Organism: "org"})
	root := uuid.NewString()
	if _, _, _, err := th.JoinAs(root, "peer", "agent", "guest"); err != nil {
		t.Fatal(err)
	}
	child, _, err := th.ExtendAs(root, "tool", "", "tools")
	if err != nil {
		t.Fatal(err)
	}
	recs := th.Records()
	byID := map[string]ThreadRecord{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	if byID[root].Profile != "guest" || byID[child].Profile != "guest&tools" {
		t.Fatalf("records: %+v", recs)
	}
	// Tamper: the persisted child claims no profile at all.
	for i := range recs {
		if recs[i].ID == child {
			recs[i].Profile = "admin"
		}
	}
	back := NewThreads(ThreadsConfig{Organism: "org"})
	if err := back.Restore(recs); err != nil {
		t.Fatal(err)
	}
	if p, _ := back.Profile(root); p != "guest" {
		t.Errorf("restored root profile %q", p)
	}
	if p, _ := back.Profile(child); p != "admin&guest" {
		t.Errorf("restored child profile %q, want the parent's narrowed (admin&guest)", p)
	}
}

// TestProfileSegmentsFreed: a profile name is released with the last node
// holding it.
func TestProfileSegmentsFreed(t *testing.T) {
	th := NewThreads(ThreadsConfig{Organism: "org"})
	root := uuid.NewString()
	if _, _, _, err := th.JoinAs(root, "peer", "agent", "rare-profile"); err != nil {
		t.Fatal(err)
	}
	if err := th.End(root); err != nil {
		t.Fatal(err)
	}
	for i := range th.shards {
		if _, ok := th.shards[i].segs.ids["rare-profile"]; ok {
			t.Fatal("the profile name outlived its threads")
		}
	}
}

// TestNodeSize: the profile costs a node no memory (it fills padding).
func TestNodeSize(t *testing.T) {
	if n := unsafe.Sizeof(node{}); n > 72 {
		t.Errorf("node is %d bytes, want at most 72", n)
	}
}

// TestNarrowProfileAllocs: the common cases allocate nothing.
func TestNarrowProfileAllocs(t *testing.T) {
	for _, c := range [][2]string{{"", ""}, {"a&b", ""}, {"", "reader"}} {
		if n := testing.AllocsPerRun(100, func() { NarrowProfile(c[0], c[1]) }); n != 0 {
			t.Errorf("NarrowProfile(%q, %q): %v allocations", c[0], c[1], n)
		}
	}
	for _, s := range []string{"a&", "&a", "b&a", "a&a", "A", " a", "é", "a&b"} {
		if canonicalProfile(s) != (narrow(s, "") == s) {
			t.Errorf("canonicalProfile(%q) = %v, narrow gives %q", s, canonicalProfile(s), narrow(s, ""))
		}
	}
}
