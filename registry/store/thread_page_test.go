package store

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNewestSummariesMatchTheGrouping checks the unfiltered page
// (newestSummaries, reading only the page's ids) against the grouping of
// the whole journal it replaces, on a journal with threads and a
// conversation spanning every partition, entries out of time order,
// failures and decisions, dead letters without a thread or conversation,
// entries without a payload tag, pruned entries (a thread pruned whole),
// and an open partition that has no lookup keys yet.
func TestNewestSummariesMatchTheGrouping(t *testing.T) {
	s := mixedThreadJournal(t)
	pages := []struct{ limit, offset int }{{1, 0}, {30, 0}, {30, 30}, {50, 200}, {7, 695}, {1000, 0}, {10, 5000}}
	for _, key := range []string{"thread", "conversation"} {
		all, err := s.summaries(key, 0, 0, ThreadFilter{}) // the grouping: no limit
		must(t, err)
		for _, p := range pages {
			t.Run(fmt.Sprintf("%s/limit=%d/offset=%d", key, p.limit, p.offset), func(t *testing.T) {
				want := all[min(p.offset, len(all)):]
				want = want[:min(p.limit, len(want))]
				got, err := s.newestSummaries(key, p.limit, p.offset)
				must(t, err)
				if len(want) == 0 {
					want = nil
				}
				if len(got) == 0 {
					got = nil
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("newestSummaries(%s, %d, %d) differs from the grouping (-want +got):\n%s",
						key, p.limit, p.offset, diff)
				}
			})
		}
	}
}

// mixedThreadJournal is the journal of TestNewestSummariesMatchTheGrouping
// (see there), of 3500 entries.
func mixedThreadJournal(t *testing.T) *Store {
	t.Helper()
	clock := newFakeClock()
	t0 := clock.Now()
	s, _ := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	const n = 3500 // three closed partitions, and the open one
	for i := range n {
		thread := fmt.Sprintf("thread-%d", i/5+i%2)
		e := testEntry(i, thread)
		e.Conversation = fmt.Sprintf("conv-%d", i/10)
		switch {
		case i%97 == 0:
			e.Thread, e.Conversation = "long-a", "conv-long"
		case i%211 == 0:
			e.Thread, e.Conversation = "long-b", "conv-long"
		case i%301 == 0:
			e.Thread, e.Conversation, e.From, e.Kind = "", "", "", DeadLetter
		case i%503 == 0:
			e.Thread, e.Conversation, e.Listener = "all-gone", "conv-gone", "gone"
		case i%13 == 0:
			e.Listener = "gone"
		}
		switch {
		case e.Kind == DeadLetter:
		case i%11 == 3:
			e.Kind = Huh
		case i%11 == 5:
			e.Kind = Decision
		case i%11 == 7:
			e.PayloadTag = ""
		}
		e.From, e.To = fmt.Sprintf("agent-%d", i%4), fmt.Sprintf("agent-%d", (i+1)%3)
		if e.Kind == DeadLetter {
			e.From = ""
		}
		if i%3 == 0 && e.PayloadTag != "" {
			e.PayloadTag = "ToolCall"
		}
		e.Time = t0.Add(time.Duration(i%17) * time.Hour).Add(time.Duration(i) * time.Second) // not in seq order
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, s)
	clock.Advance(100 * 24 * time.Hour)
	pruned, err := s.Sweep(ctx, func(l, _ string) Retention {
		if l == "gone" {
			return Retention{Policy: RetainDays, Days: 1}
		}
		return Retention{}
	})
	must(t, err)
	if pruned == 0 {
		t.Fatal("nothing pruned")
	}
	var keyed int64
	must(t, s.read(func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT coalesce(max(part) + 1, 0) << 10 FROM journal_keys`).Scan(&keyed)
	}))
	if keyed == 0 || keyed > n {
		t.Fatalf("lookup keys cover seqs below %d, want some but not the open partition", keyed)
	}
	return s
}

// TestThreadEntriesMatchLookups: ThreadEntries and ConversationEntries
// return, by id, what Thread and Conversation return for each id — across
// partitions, in the open partition, for an id never journaled and for an
// id whose entries were all pruned.
func TestThreadEntriesMatchLookups(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	for i := range 2500 {
		e := testEntry(i, fmt.Sprintf("t-%d", i%40))
		e.Conversation = fmt.Sprintf("c-%d", i%15)
		if i%40 == 9 {
			e.Listener = "gone"
		}
		e.Time = clock.Now()
		must(t, s.Append(e))
	}
	flush(t, s)
	clock.Advance(100 * 24 * time.Hour)
	_, err := s.Sweep(context.Background(), func(l, _ string) Retention {
		if l == "gone" {
			return Retention{Policy: RetainDays, Days: 1}
		}
		return Retention{}
	})
	must(t, err)
	tests := []struct {
		name  string
		batch func([]string) (map[string][]Entry, error)
		one   func(string) ([]Entry, error)
		ids   []string
	}{
		{"threads", s.ThreadEntries, s.Thread, []string{"t-0", "t-9", "t-39", "t-7", "t-0", "nobody"}},
		{"conversations", s.ConversationEntries, s.Conversation, []string{"c-3", "c-14", "nobody"}},
		{"none", s.ThreadEntries, s.Thread, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.batch(tt.ids)
			must(t, err)
			want := map[string][]Entry{}
			for _, id := range tt.ids {
				es, err := tt.one(id)
				must(t, err)
				if len(es) > 0 {
					want[id] = es
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("batched entries differ from one lookup each (-want +got):\n%s", diff)
			}
		})
	}
}
