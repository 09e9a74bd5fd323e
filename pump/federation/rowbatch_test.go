package federation

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestRowsOfOneCommitInOneStatement: the outbox entries, their deletions,
// the seen hashes and the done marks that one group commit carries are
// written in one statement each, not one per envelope (an entry inserted
// and deleted in one run is gone after it) — each write's done still told once its
// commit is durable — and a write of the same run that fails leaves the
// others' rows written (the store retries the run write by write). The
// state in memory writes the same rows.
func TestRowsOfOneCommitInOneStatement(t *testing.T) {
	const k = 20
	for _, tc := range []struct {
		name    string
		inStore bool
	}{{"store", true}, {"memory", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var st *store.Store
			if tc.inStore {
				var err error
				// Only the synchronous writes below commit.
				st, err = store.Open(filepath.Join(t.TempDir(), "data"),
					store.Options{BatchDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { closeStore(t, st) })
			}
			d, err := openDB(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.close() })
			now := time.Now()
			// Two runs of k rows of each kind: one that commits, then one
			// with a write that fails.
			for run, failing := range []bool{false, true} {
				var seqs []int64
				for i := range k {
					id := fmt.Sprint(run, "-", i)
					seq, err := d.enqueue("g", "call-"+id, []byte("<envelope/>"), now, nil)
					if err != nil {
						t.Fatal(err)
					}
					seqs = append(seqs, seq)
					if err := d.write("serve", d.serveRows("conv-"+id, "g", "call-"+id, now)); err != nil {
						t.Fatal(err)
					}
				}
				var before int64
				if st != nil {
					before = st.Statements()
				}
				dones := make(chan error, 3*k) // acked tells failures only
				tell := func(err error) { dones <- err }
				failed := make(chan error, 1)
				for i := range k {
					id := fmt.Sprint(run, "-", i)
					d.markSeenHash(sha256.Sum256([]byte("answer-"+id)), now, now, tell)
					d.acked(seqs[i], tell)
					// A new entry, and for every other one its deletion in
					// the same run: written after the insert.
					seq := d.newSeq()
					d.later("outbox", func(tx execer) error {
						return d.insertOutbox(tx, seq, "g", "answer-"+id, []byte("<envelope/>"), now)
					}, tell)
					if i%2 == 0 {
						d.acked(seq, tell)
					}
					if failing && i == k/2 {
						d.later("failing", func(execer) error { return errors.New("boom") }, func(err error) { failed <- err })
					}
					d.callInjected("conv-"+id, tell)
				}
				if err := d.write("commit", func(execer) error { return nil }); err != nil {
					t.Fatal(err)
				}
				for range 3 * k {
					if err := waitErr(t, dones); err != nil {
						t.Fatal(err)
					}
				}
				if failing {
					if err := waitErr(t, failed); err == nil {
						t.Fatal("the failing write of the run was committed")
					}
				}

				var got struct{ Seen, Outbox, Done int }
				for q, n := range map[string]*int{
					`SELECT count(*) FROM federation_seen`:                    &got.Seen,
					`SELECT count(*) FROM federation_outbox`:                  &got.Outbox,
					`SELECT count(*) FROM federation_received WHERE done = 1`: &got.Done,
				} {
					if err := d.b.reads().QueryRow(q).Scan(n); err != nil {
						t.Fatal(err)
					}
				}
				want := struct{ Seen, Outbox, Done int }{(run + 1) * k, (run + 1) * k / 2, (run + 1) * k}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("run %d: rows after the commit (-want +got):\n%s", run, diff)
				}
				if st == nil || failing {
					continue
				}
				// BEGIN, an INSERT of the entries, a DELETE of the acknowledged
				// ones, an INSERT of the hashes, an UPDATE of the marks, COMMIT
				// — each in chunks (20 = 16 + 4, 30 = 16 + 8 + 4 + 2): 12. One
				// statement a row was 4.5k+2.
				if n := st.Statements() - before; n > 12 {
					t.Fatalf("%d statements for %d rows of each kind in one commit, want at most 12", n, k)
				}
			}
		})
	}
}

// waitErr waits (60 s at most) for an outcome on ch.
func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("no outcome in 60s")
		return nil
	}
}

// TestGatheredRowsKeepTheirOrder: rows gathered for the end of their run
// are written as if each write had run its statements itself — a
// statement a later write runs (keepAnswer) sees the call record gathered
// before it, and a conversation or call whose rows are deleted and
// inserted again in one run keeps the rows inserted last.
func TestGatheredRowsKeepTheirOrder(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "data"),
		store.Options{BatchDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)}) // only synchronous writes commit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore(t, st) })
	d, err := openDB(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.close() })
	now := time.Now()
	always := func() bool { return true }
	dones := make(chan error, 16)
	tell := func(err error) { dones <- err }
	commit := func() {
		t.Helper()
		if err := d.write("commit", func(execer) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := d.b.reads().QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A call's record gathered, then an answer kept for it in the same run.
	d.enqueueCallThen(d.newSeq(), "g", "call-1", &callRecord{callerThread: "t"}, []byte("<call/>"), now, always, tell)
	kept, err := d.keepAnswer("g", "call-1", []byte("<answer/>"))
	if err != nil || !kept {
		t.Fatalf("keepAnswer after the call's record was gathered: kept %v, %v; want kept", kept, err)
	}
	if err := waitErr(t, dones); err != nil {
		t.Fatal(err)
	}

	// Its record deleted and made again (a handling after Unhalt) in one
	// run; a conversation refused and received again in one run.
	d.callDone("call-1", tell)
	d.enqueueCallThen(d.newSeq(), "g", "call-1", &callRecord{callerThread: "t"}, []byte("<call/>"), now, always, tell)
	d.serveBegin("conv-1", "g", "call-2", now, false, tell)
	d.serveEnd("conv-1", true, func(err error) { dones <- err })
	d.serveBegin("conv-1", "g", "call-2", now, false, tell)
	commit()
	for range 4 {
		if err := waitErr(t, dones); err != nil {
			t.Fatal(err)
		}
	}
	got := []int{
		count(`SELECT count(*) FROM federation_calls WHERE link_thread = 'call-1'`),
		count(`SELECT count(*) FROM federation_received WHERE conv = 'conv-1'`),
		count(`SELECT count(*) FROM federation_served WHERE conv = 'conv-1'`),
	}
	if diff := cmp.Diff([]int{1, 1, 1}, got); diff != "" {
		t.Fatalf("call record, received and served rows inserted again after their deletion in one run (-want +got):\n%s", diff)
	}
}
