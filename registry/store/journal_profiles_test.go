package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// journalView is one row of the journal view, as the tests read it.
type journalView struct {
	Seq                      int64
	Thread, Listener, Kind   sql.NullString
	Profile, Pruned, Payload sql.NullString
	Sender, Recipient, Root  sql.NullString
	HasTime                  bool
}

// readJournalView reads the journal view of the database in dir, by seq.
func readJournalView(t *testing.T, dir string) []journalView {
	t.Helper()
	rows, err := rawDB(t, dir).Query(`SELECT seq, thread, listener, kind, profile, pruned, payload, sender, recipient, root,
		time IS NOT NULL FROM journal ORDER BY seq`)
	must(t, err)
	defer rows.Close()
	var out []journalView
	for rows.Next() {
		var v journalView
		must(t, rows.Scan(&v.Seq, &v.Thread, &v.Listener, &v.Kind, &v.Profile, &v.Pruned, &v.Payload, &v.Sender,
			&v.Recipient, &v.Root, &v.HasTime))
		out = append(out, v)
	}
	must(t, rows.Err())
	return out
}

// TestSweepByProfile journals entries of one listener under profiles with
// different retention and checks that each sweep prunes exactly the
// entries their profile's policy no longer keeps, and that the journal
// view keeps every pruned entry's metadata, saying why it was pruned.
func TestSweepByProfile(t *testing.T) {
	clock := newFakeClock()
	s, dir := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	pod := Retention{Policy: PruneOnDelivery}
	hour := Retention{Policy: Window, Window: time.Hour}
	policies := map[string]Retention{
		"":                {Policy: RetainForever}, // the listener's own
		"concierge":       pod,
		"coder":           {Policy: RetainForever},
		"audit":           hour,
		"audit&concierge": Either(hour, pod),
	}
	policy := func(listener, profile string) Retention {
		if listener != "tool" {
			t.Errorf("sweep asked for listener %q", listener)
		}
		return policies[profile]
	}
	add := func(profile string, kind Kind) int64 {
		e := testEntry(0, "t-"+profile)
		e.Listener, e.Profile, e.Kind = "tool", profile, kind
		seq, err := s.AppendSync(ctx, e)
		must(t, err)
		return seq
	}
	// seq 1 "", 2-3 concierge, 4 coder, 5 audit, 6 audit&concierge, 7 a
	// concierge <huh> (never delivered: kept for good).
	for _, p := range []string{"", "concierge", "concierge", "coder", "audit", "audit&concierge"} {
		add(p, Message)
	}
	add("concierge", Huh)
	for _, seq := range []int64{2, 4, 6} {
		must(t, s.MarkDelivered(seq))
	}
	flush(t, s)

	clock.Advance(30 * time.Minute)
	n, err := s.Sweep(ctx, policy)
	must(t, err)
	if n != 1 {
		t.Fatalf("sweep at 30 min deleted %d, want 1", n)
	}
	if d := cmp.Diff([]int64{1, 3, 4, 5, 6, 7}, seqs(t, s)); d != "" {
		t.Fatalf("after 30 min (-want +got):\n%s", d)
	}

	clock.Advance(90 * time.Minute)
	n, err = s.Sweep(ctx, policy)
	must(t, err)
	if n != 2 {
		t.Fatalf("sweep at 2 h deleted %d, want 2", n)
	}
	if d := cmp.Diff([]int64{1, 3, 4, 7}, seqs(t, s)); d != "" {
		t.Fatalf("after 2 h (-want +got):\n%s", d)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep.Faults)
	}
	must(t, s.Close())

	view := readJournalView(t, dir)
	if len(view) != 7 {
		t.Fatalf("journal view: %d rows, want 7", len(view))
	}
	pruned := map[int64]string{2: "prune_on_delivery at ", 5: "window(1h) at ", 6: "prune_on_delivery+window(1h) at "}
	for _, v := range view {
		want := []string{"", "concierge", "concierge", "coder", "audit", "audit&concierge", "concierge"}[v.Seq-1]
		if !v.Profile.Valid || v.Profile.String != want {
			t.Errorf("seq %d: profile %+v, want %q", v.Seq, v.Profile, want)
		}
		if v.Thread.String != "t-"+want || v.Listener.String != "tool" || v.Sender.String != "greeter" ||
			v.Recipient.String != "shouter" || v.Root.String != "Greeting" || !v.HasTime {
			t.Errorf("seq %d: metadata lost: %+v", v.Seq, v)
		}
		reason, isPruned := pruned[v.Seq]
		switch {
		case isPruned && (!strings.HasPrefix(v.Pruned.String, reason) || v.Payload.Valid):
			t.Errorf("seq %d: pruned %+v payload %+v, want pruned %q… and no payload", v.Seq, v.Pruned, v.Payload, reason)
		case !isPruned && (v.Pruned.Valid || !v.Payload.Valid):
			t.Errorf("seq %d: pruned %+v payload valid %v, want kept", v.Seq, v.Pruned, v.Payload.Valid)
		}
	}
}

// TestEither checks how two retention policies combine: an entry is
// deleted only when both would delete it.
func TestEither(t *testing.T) {
	forever := Retention{Policy: RetainForever}
	pod := Retention{Policy: PruneOnDelivery}
	day := Retention{Policy: RetainDays, Days: 1}
	hour := Retention{Policy: Window, Window: time.Hour}
	week := Retention{Policy: Window, Window: 7 * 24 * time.Hour}
	tests := []struct {
		a, b, want Retention
	}{
		{forever, pod, forever},
		{pod, Retention{}, forever},
		{hour, forever, forever},
		{pod, pod, pod},
		{hour, week, week},
		{week, day, week},
		{hour, day, day},
		{pod, hour, Retention{Policy: PruneOnDelivery, Window: time.Hour}},
		{day, pod, Retention{Policy: PruneOnDelivery, Window: 24 * time.Hour}},
		{Retention{Policy: PruneOnDelivery, Window: time.Hour}, week, Retention{Policy: PruneOnDelivery, Window: 7 * 24 * time.Hour}},
	}
	for _, tt := range tests {
		for _, got := range []Retention{Either(tt.a, tt.b), Either(tt.b, tt.a)} {
			if got != tt.want {
				t.Errorf("Either(%v, %v) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
		}
	}
}
