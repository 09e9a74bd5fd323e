package organism

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// kernelRowCounts counts the rows of the durable kernel-state tables of the
// store in dir.
func kernelRowCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int{}
	for _, table := range []string{"threads", "watchers", "slots", "context_segments"} {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// kernelCounts is what the registries hold, in the store's terms.
func kernelCounts(o *Organism) map[string]int {
	st := o.Pump.Context().Stats()
	return map[string]int{"threads": o.Pump.Threads().Len(), "watchers": o.Pump.Todos().Len(),
		"slots": st.TotalSlots, "context_segments": 0}
}

// TestKernelRowsFollowTheRegistries: the durable kernel state of N completed
// hello-world conversations is exactly what the registries hold — no row
// outlives its registry entry — and it returns to its baseline once the
// conversations' threads are gone.
//
// What the registries hold between the two is by design, not a leak: the
// response-handler's nil ends its own thread only, so a completed
// conversation's root (greeter) and shouter threads stay live until the
// thread TTL collects them (platform.thread_ttl, an hour by default), and
// with them the watcher the greeter registers per greeting (raised by the
// shout, closed when its thread ends) and their context history. Once the
// TTL sweep ran, no thread and no watcher is left anywhere, and the only
// slots left are the histories kept for conversations a client began with
// an agent (conversations continue), in memory and in the store alike.
func TestKernelRowsFollowTheRegistries(t *testing.T) {
	dir := t.TempDir()
	o, out := startDurableHello(t, dir, func(c *config.Organism) {
		c.Platform.ThreadTTL = config.Duration(time.Nanosecond) // the sweep below collects every idle thread
	})
	const n = 20
	base := kernelCounts(o)
	for range n {
		converse(t, o, "kernel")
		<-out.ch
	}
	if err := o.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	live, rows := kernelCounts(o), kernelRowCounts(t, dir)
	t.Logf("after %d conversations: registries %v, store %v (baseline %v)", n, live, rows, base)
	for table, want := range live {
		if rows[table] != want {
			t.Errorf("live: store holds %d %s rows, the registries %d", rows[table], table, want)
		}
	}
	if live["watchers"] > n {
		t.Errorf("live: %d watchers for %d conversations", live["watchers"], n)
	}

	o.Pump.Threads().Collect() // the TTL sweep the collector runs every minute
	if err := o.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	swept, rows := kernelCounts(o), kernelRowCounts(t, dir)
	kept := o.Pump.Context().Stats()
	t.Logf("after the sweep: registries %v, store %v, context %d histories (%d kept)", swept, rows, kept.ThreadCount, kept.Kept)
	if swept["threads"] != 0 || swept["watchers"] != 0 {
		t.Errorf("after the sweep the registries hold %d threads and %d watchers, want none", swept["threads"], swept["watchers"])
	}
	if kept.ThreadCount != kept.Kept || kept.Kept > n {
		t.Errorf("after the sweep the context holds %d histories, %d kept, for %d conversations", kept.ThreadCount, kept.Kept, n)
	}
	shutdown(t, o)
	closed := kernelRowCounts(t, dir)
	for table, want := range swept {
		if rows[table] != want || closed[table] != want {
			t.Errorf("after the sweep: store holds %d %s rows (%d once closed), the registries %d", rows[table], table,
				closed[table], want)
		}
	}
}

// TestKernelSegmentsGoWithTheirHistory: the durable sinks skip the DELETE
// on context_segments for a history that never had segments, so they must
// know every thread that has: one whose segments were put, and one whose
// segments were restored. A deleted history takes its segments with it in
// both cases, and segments whose history is gone when the organism
// restarts are deleted then.
func TestKernelSegmentsGoWithTheirHistory(t *testing.T) {
	dir := t.TempDir()
	segRows := func() map[string]int {
		t.Helper()
		db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName)+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(`SELECT thread, COUNT(*) FROM context_segments GROUP BY thread`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var (
				thread string
				n      int
			)
			if err := rows.Scan(&thread, &n); err != nil {
				t.Fatal(err)
			}
			out[thread] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	flush := func(o *Organism) {
		t.Helper()
		if err := o.Store().Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	history := func(o *Organism, thread string, segments bool) {
		t.Helper()
		cb := o.Pump.Context()
		for range 2 {
			if _, err := cb.Append(registry.Slot{ThreadID: thread, From: "a", To: "b", PayloadType: "Note", Raw: []byte("<Note/>")}); err != nil {
				t.Fatal(err)
			}
		}
		if segments {
			if _, err := cb.PutSegments(thread, []registry.Segment{{Index: 0, Slots: []int{0}, Tier: registry.TierFolded,
				Summary: "a note"}}); err != nil {
				t.Fatal(err)
			}
		}
	}

	o, _ := startDurableHello(t, dir, nil)
	history(o, "put-then-deleted", true)
	history(o, "restored-then-deleted", true)
	history(o, "orphaned", true)
	history(o, "plain", false)
	flush(o)
	o.Pump.Context().DeleteThread("put-then-deleted")
	flush(o)
	if got, want := segRows(), map[string]int{"restored-then-deleted": 1, "orphaned": 1}; !cmp.Equal(got, want) {
		t.Fatalf("segments before the restart: %v, want %v", got, want)
	}
	shutdown(t, o)

	// The history of "orphaned" goes behind the organism's back: its
	// segment is left without slots.
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(st.DeleteSlots("orphaned"), st.Close()); err != nil {
		t.Fatal(err)
	}

	o, _ = startDurableHello(t, dir, nil)
	defer shutdown(t, o)
	flush(o)
	if got, want := segRows(), map[string]int{"restored-then-deleted": 1}; !cmp.Equal(got, want) {
		t.Fatalf("segments after the restart: %v, want %v", got, want)
	}
	o.Pump.Context().DeleteThread("restored-then-deleted")
	o.Pump.Context().DeleteThread("plain")
	flush(o)
	if got := segRows(); len(got) != 0 {
		t.Fatalf("segments after their histories were deleted: %v", got)
	}
}
