package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestJournalRoutes: the writer enters each route (direction, kind and
// names) once, with the cache of routes and beyond it; keeps the ids across
// a reopen; enters again the route of a transaction that was rolled back;
// and entries read their direction, kind and names back.
func TestJournalRoutes(t *testing.T) {
	for _, limit := range []int{maxCachedRoutes, 2} {
		t.Run(fmt.Sprintf("cache of %d", limit), func(t *testing.T) {
			defer func(n int) { maxCachedRoutes = n }(maxCachedRoutes)
			maxCachedRoutes = limit
			journalRoutesRounds(t)
		})
	}
}

// routeRow is one journal_routes row with its names.
type routeRow struct {
	ID                                              int64
	Direction, Kind, From, To, Listener, Root, Prof string
}

func journalRoutesRounds(t *testing.T) {
	ctx := context.Background()
	opts := Options{BatchDelay: time.Hour, BatchRows: 1000}
	s, dir := openTest(t, opts)
	routes := func() map[routeRow]bool {
		t.Helper()
		out := map[routeRow]bool{}
		rows, err := rawDB(t, dir).Query(`SELECT ro.id, ro.direction, ro.kind, s.name, t.name, l.name, o.name, p.name
			FROM journal_routes AS ro JOIN journal_names AS s ON s.id = ro.sender
			JOIN journal_names AS t ON t.id = ro.recipient JOIN journal_names AS l ON l.id = ro.listener
			JOIN journal_names AS o ON o.id = ro.root JOIN journal_names AS p ON p.id = ro.profile`)
		must(t, err)
		defer rows.Close()
		for rows.Next() {
			var r routeRow
			must(t, rows.Scan(&r.ID, &r.Direction, &r.Kind, &r.From, &r.To, &r.Listener, &r.Root, &r.Prof))
			out[r] = true
		}
		must(t, rows.Err())
		return out
	}
	var want []string
	appendRoute := func(i int, dir Direction, kind Kind, from, profile string) int64 {
		t.Helper()
		e := testEntry(i, "t")
		e.Direction, e.Kind, e.From, e.Profile = dir, kind, from, profile
		seq, err := s.AppendSeq(e)
		must(t, err)
		want = append(want, fmt.Sprint(dir, kind, from, e.To, e.Listener, e.PayloadTag, profile))
		return seq
	}
	// Four routes, each journaled three times.
	for i := range 12 {
		appendRoute(i, Direction(1+i%2), Kind(1+(i/2)%2), "greeter", "")
	}
	must(t, s.Flush(ctx))
	must(t, s.Close())
	first := routes()
	if len(first) != 4 {
		t.Fatalf("journal_routes holds %v, want 4 routes", first)
	}

	// A batch that fails (a mark of a seq never journaled) is rolled back
	// and retried op by op: the new route of its append is entered by the
	// retry, once.
	s = openAt(t, dir, opts)
	seq := appendRoute(12, Outbound, Huh, "newcomer", "admin")
	appendRoute(13, Inbound, Message, "greeter", "")
	must(t, s.MarkDelivered(seq+100))
	if err := s.Flush(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Flush = %v, want the mark's ErrNotFound", err)
	}
	appendRoute(14, Outbound, Huh, "newcomer", "admin")
	must(t, s.Flush(ctx))
	entries, err := s.After(0, 0)
	must(t, err)
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep.Faults)
	}
	must(t, s.Close())
	after := routes()
	for r := range first {
		if !after[r] {
			t.Errorf("route %+v changed after a reopen", r)
		}
	}
	if len(after) != len(first)+1 {
		t.Errorf("journal_routes holds %v, want the newcomer's route entered once", after)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprint(e.Direction, e.Kind, e.From, e.To, e.Listener, e.PayloadTag, e.Profile))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("routes read back (-appended +read):\n%s", d)
	}
}
