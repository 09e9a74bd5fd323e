package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// walkPages pages through the walk w of kind (keyThread, keyConversation)
// limit summaries a page, each page resuming at the last's cursor, and
// returns every summary and the number of pages.
func walkPages(t *testing.T, s *Store, kind byte, w ThreadWalk, limit int) ([]ThreadSummary, int) {
	t.Helper()
	walk := s.WalkThreads
	if kind == keyConversation {
		walk = s.WalkConversations
	}
	var all []ThreadSummary
	for pages := 1; ; pages++ {
		if pages > 100_000 {
			t.Fatal("the walk does not end")
		}
		var page []ThreadSummary
		next, err := walk(w, func(sums []ThreadSummary, entries map[string][]Entry) (bool, error) {
			for _, s := range sums {
				if len(entries[s.ID]) != int(s.Messages) {
					t.Errorf("thread %q: %d entries for %d messages", s.ID, len(entries[s.ID]), s.Messages)
				}
				page = append(page, s)
				if len(page) == limit {
					return true, nil
				}
			}
			return false, nil
		})
		must(t, err)
		all = append(all, page...)
		if len(page) == limit {
			next = page[len(page)-1].LastSeq
		}
		if next == 0 {
			return all, pages
		}
		if next >= w.Before && w.Before != 0 {
			t.Fatalf("cursor %d does not move back from %d", next, w.Before)
		}
		w.Before = next
	}
}

// TestThreadWalkMatchesTheGrouping: paging through the journal with
// WalkThreads (WalkConversations), whatever the page size and the scan
// budget, lists exactly what grouping the whole journal does (Threads,
// Conversations without a limit) for every filter — on a journal with
// threads and conversations spanning partitions, entries out of time
// order, failures, dead letters without a thread, pruned entries (a thread
// pruned whole) and an open partition without lookup keys.
func TestThreadWalkMatchesTheGrouping(t *testing.T) {
	s := mixedThreadJournal(t)
	t0 := newFakeClock().Now()
	filters := []struct {
		name string
		f    ThreadFilter
	}{
		{"none", ThreadFilter{}},
		{"agent", ThreadFilter{Participant: "agent-1"}},
		{"agent-to", ThreadFilter{Participant: "agent-2"}},
		{"agent-nobody", ThreadFilter{Participant: "nobody"}},
		{"since", ThreadFilter{Since: t0.Add(10 * time.Hour)}},
		{"agent-since", ThreadFilter{Participant: "agent-3", Since: t0.Add(16 * time.Hour)}},
		{"until", ThreadFilter{Until: t0.Add(2 * time.Hour)}},
		{"tag", ThreadFilter{PayloadTag: "ToolCall"}},
		{"prefix", ThreadFilter{IDPrefix: "THREAD-1"}},
		{"prefix-conv", ThreadFilter{IDPrefix: "conv-l"}},
	}
	walks := []struct {
		budget, want, limit int
	}{
		{0, 30, 30},   // unbounded: every page full
		{1024, 1, 30}, // pages short where the budget runs out
		{300, 5, 7},   // short walks
		{5000, 4096, 1000},
	}
	for _, kind := range []byte{keyThread, keyConversation} {
		key := map[byte]string{keyThread: "thread", keyConversation: "conversation"}[kind]
		for _, ft := range filters {
			want, err := s.summaries(key, 0, 0, ft.f)
			must(t, err)
			for _, wt := range walks {
				t.Run(fmt.Sprintf("%s/%s/budget=%d/want=%d/limit=%d", key, ft.name, wt.budget, wt.want, wt.limit), func(t *testing.T) {
					got, pages := walkPages(t, s, kind, ThreadWalk{Budget: wt.budget, Want: wt.want, Filter: ft.f}, wt.limit)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("walk over %d pages differs from the grouping (-want +got):\n%s", pages, diff)
					}
				})
			}
		}
	}
}

// TestThreadWalkRefusesBadWalks: a filter by conversation, a negative
// cursor or budget are refused with ErrInvalid.
func TestThreadWalkRefusesBadWalks(t *testing.T) {
	s, _ := openTest(t, Options{})
	for _, w := range []ThreadWalk{{Filter: ThreadFilter{Conversation: "c"}}, {Before: -1}, {Budget: -1}} {
		_, err := s.WalkThreads(w, func([]ThreadSummary, map[string][]Entry) (bool, error) { return false, nil })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("WalkThreads(%+v) = %v, want ErrInvalid", w, err)
		}
	}
}

// TestThreadFirstsMatchLookups: ThreadFirsts returns, by id, the first
// entry Thread returns for each id — a thread spanning partitions, one in
// the open partition, one whose first entries were pruned, one pruned
// whole, one never journaled.
func TestThreadFirstsMatchLookups(t *testing.T) {
	s := mixedThreadJournal(t)
	ids := []string{"thread-0", "thread-1", "thread-350", "thread-699", "long-a", "long-b", "all-gone", "", "nobody"}
	got, err := s.ThreadFirsts(ids)
	must(t, err)
	want := map[string]Entry{}
	for _, id := range ids {
		es, err := s.Thread(id)
		must(t, err)
		if len(es) > 0 {
			want[id] = es[0]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first entries differ from Thread's (-want +got):\n%s", diff)
	}
}
