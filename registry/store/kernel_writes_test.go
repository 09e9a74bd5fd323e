package store

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// batchedStore opens a store whose writer commits only when flushed, so
// everything enqueued between two flushes is one batch.
func batchedStore(t *testing.T) (*Store, string) {
	t.Helper()
	return openTest(t, Options{BatchRows: 100000, BatchDelay: time.Hour})
}

// totalChanges returns SQLite's count of rows the writer connection has
// inserted, updated or deleted since it was opened.
func totalChanges(t *testing.T, s *Store) int64 {
	t.Helper()
	n, err := s.do(context.Background(), "total changes", func(w *writer) (int64, error) {
		v, err := w.queryInt64s(`SELECT total_changes()`)
		if err != nil {
			return 0, err
		}
		return v[0], nil
	})
	must(t, err)
	return n
}

// kernelState is everything LoadThreads, LoadWatchers and LoadSlots return.
type kernelState struct {
	Threads  []ThreadRow
	Watchers []WatcherRow
	Slots    []SlotRow
}

// loadKernel loads the committed kernel state of s: the slot rows as
// stored (loadSlots), holes included, since these tests check what the
// writes left, which LoadSlots would repair (slotsUpToHoles).
func loadKernel(t *testing.T, s *Store) kernelState {
	t.Helper()
	var (
		k   kernelState
		err error
	)
	k.Threads, err = s.LoadThreads()
	must(t, err)
	k.Watchers, err = s.LoadWatchers()
	must(t, err)
	k.Slots, err = s.loadSlots()
	must(t, err)
	return k
}

// kernelFixture builds the rows the coalescing tests write.
type kernelFixture struct{ at time.Time }

func (f kernelFixture) thread(id string, path ...string) ThreadRow {
	return ThreadRow{ID: id, Path: path, Created: f.at, Touched: f.at}
}

func (f kernelFixture) watcher(id, thread string, raised bool) WatcherRow {
	return WatcherRow{ID: id, Thread: thread, Issuer: "planner", WaitFor: "Result", Raised: raised, Created: f.at}
}

func (f kernelFixture) slot(thread string, i int, raw string) SlotRow {
	return SlotRow{Thread: thread, Index: i, From: "a", To: "b", PayloadType: "Greeting", Raw: []byte(raw),
		Time: f.at.Add(time.Duration(i))}
}

// TestKernelWritesCoalesce: the kernel-state writes of one batch commit
// exactly the state the same writes would have produced one by one, and a
// row created and ended inside one batch is never written.
func TestKernelWritesCoalesce(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	type write func(s *Store) error
	putThread := func(r ThreadRow) write { return func(s *Store) error { return s.PutThread(r) } }
	endThreads := func(ids ...string) write { return func(s *Store) error { return s.DeleteThreads(ids) } }
	putWatcher := func(r WatcherRow) write { return func(s *Store) error { return s.PutWatcher(r) } }
	closeWatcher := func(id string) write { return func(s *Store) error { return s.DeleteWatcher(id) } }
	putSlot := func(r SlotRow) write { return func(s *Store) error { return s.PutSlot(r) } }
	dropSlots := func(thread string) write { return func(s *Store) error { return s.DeleteSlots(thread) } }

	tests := []struct {
		name   string
		before []write // committed in an earlier batch
		batch  []write // one batch
		want   kernelState
		// unwritten: the batch must not change a single row.
		unwritten bool
	}{{
		name: "create and end in one batch leaves nothing",
		batch: []write{putThread(f.thread("t1", "org", "a")), putSlot(f.slot("t1", 0, "<a/>")),
			putWatcher(f.watcher("w1", "t1", false)), putWatcher(f.watcher("w1", "t1", true)),
			closeWatcher("w1"), dropSlots("t1"), endThreads("t1")},
		unwritten: true,
	}, {
		name:   "end in a later batch deletes",
		before: []write{putThread(f.thread("t1", "org")), putSlot(f.slot("t1", 0, "<a/>")), putWatcher(f.watcher("w1", "t1", false))},
		batch:  []write{closeWatcher("w1"), dropSlots("t1"), endThreads("t1")},
	}, {
		name:   "replace then end an earlier row deletes it",
		before: []write{putThread(f.thread("t1", "org"))},
		batch:  []write{putThread(f.thread("t1", "org", "longer")), endThreads("t1")},
	}, {
		name:  "end then recreate keeps the new row",
		batch: []write{putThread(f.thread("t1", "org")), endThreads("t1", "t2"), putThread(f.thread("t1", "org", "again"))},
		want:  kernelState{Threads: []ThreadRow{f.thread("t1", "org", "again")}},
	}, {
		name:  "last write of a row wins",
		batch: []write{putWatcher(f.watcher("w1", "t1", false)), putWatcher(f.watcher("w1", "t1", true))},
		want:  kernelState{Watchers: []WatcherRow{f.watcher("w1", "t1", true)}},
	}, {
		name:   "slots put after a drop survive it",
		before: []write{putSlot(f.slot("t1", 0, "<old/>")), putSlot(f.slot("t1", 1, "<old/>")), putSlot(f.slot("t2", 0, "<keep/>"))},
		batch: []write{putSlot(f.slot("t1", 2, "<gone/>")), dropSlots("t1"), putSlot(f.slot("t1", 0, "<new/>")),
			putSlot(f.slot("t1", 0, "<newer/>"))},
		want: kernelState{Slots: []SlotRow{f.slot("t1", 0, "<newer/>"), f.slot("t2", 0, "<keep/>")}},
	}, {
		name: "a drop takes its group's rows only, interleaved with others'",
		batch: []write{putSlot(f.slot("t1", 0, "<a/>")), putSlot(f.slot("t2", 0, "<b/>")), putSlot(f.slot("t1", 1, "<c/>")),
			putSlot(f.slot("t3", 0, "<d/>")), putSlot(f.slot("t2", 1, "<e/>")), putSlot(f.slot("t1", 1, "<c2/>")),
			dropSlots("t1")},
		want: kernelState{Slots: []SlotRow{f.slot("t2", 0, "<b/>"), f.slot("t2", 1, "<e/>"), f.slot("t3", 0, "<d/>")}},
	}, {
		name: "drop, put, drop again leaves what came after the last drop",
		batch: []write{putSlot(f.slot("t1", 0, "<a/>")), dropSlots("t1"), putSlot(f.slot("t1", 0, "<b/>")),
			putSlot(f.slot("t2", 0, "<k/>")), dropSlots("t1"), putSlot(f.slot("t1", 1, "<c/>"))},
		want: kernelState{Slots: []SlotRow{f.slot("t1", 1, "<c/>"), f.slot("t2", 0, "<k/>")}},
	}, {
		name: "other rows are untouched",
		before: []write{putThread(f.thread("keep", "org")), putWatcher(f.watcher("wk", "keep", false)),
			putSlot(f.slot("keep", 0, "<k/>"))},
		batch: []write{putThread(f.thread("t1", "org")), putWatcher(f.watcher("w1", "t1", false)),
			putSlot(f.slot("t1", 0, "<a/>")), closeWatcher("w1"), dropSlots("t1"), endThreads("t1")},
		want: kernelState{Threads: []ThreadRow{f.thread("keep", "org")}, Watchers: []WatcherRow{f.watcher("wk", "keep", false)},
			Slots: []SlotRow{f.slot("keep", 0, "<k/>")}},
		unwritten: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := batchedStore(t)
			for _, w := range tt.before {
				must(t, w(s))
			}
			flush(t, s)
			changes := totalChanges(t, s)
			for _, w := range tt.batch {
				must(t, w(s))
			}
			commits := s.Stats().Commits
			flush(t, s)
			if got := s.Stats().Commits - commits; got != 1 {
				t.Fatalf("the batch took %d commits, want 1", got)
			}
			if d := cmp.Diff(tt.want, loadKernel(t, s)); d != "" {
				t.Errorf("kernel state (-want +got):\n%s", d)
			}
			if got := totalChanges(t, s) - changes; tt.unwritten && got != 0 {
				t.Errorf("the batch changed %d rows, want none", got)
			}
		})
	}
}

// copyCommitted copies the database and its WAL out of the data directory
// of a store whose writer is idle: what a kill -9 at that moment would
// leave on disk (the committed batches, nothing of the queued ones).
func copyCommitted(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	for _, name := range []string{DatabaseFileName, DatabaseFileName + "-wal"} {
		src, err := os.Open(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		must(t, err)
		out, err := os.Create(filepath.Join(dst, name))
		must(t, err)
		_, err = io.Copy(out, src)
		must(t, err)
		must(t, errors.Join(src.Close(), out.Close()))
	}
	return dst
}

// TestKernelCrashBetweenBatches: a crash after one committed batch and
// before the next restores exactly the state live at the first commit;
// threads created and ended inside the first batch, and everything of the
// uncommitted batch, are absent.
func TestKernelCrashBetweenBatches(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	s, dir := batchedStore(t)
	must(t, s.PutThread(f.thread("live", "org", "a")))
	must(t, s.PutSlot(f.slot("live", 0, "<a/>")))
	must(t, s.PutWatcher(f.watcher("w-live", "live", false)))
	must(t, s.PutThread(f.thread("short", "org", "b")))
	must(t, s.PutSlot(f.slot("short", 0, "<b/>")))
	must(t, s.DeleteSlots("short"))
	must(t, s.DeleteThreads([]string{"short"}))
	flush(t, s)
	// The second batch stays queued: BatchDelay is an hour.
	must(t, s.DeleteThreads([]string{"live"}))
	must(t, s.PutThread(f.thread("late", "org")))
	crashed := copyCommitted(t, dir)

	want := kernelState{Threads: []ThreadRow{f.thread("live", "org", "a")}, Watchers: []WatcherRow{f.watcher("w-live", "live", false)},
		Slots: []SlotRow{f.slot("live", 0, "<a/>")}}
	if d := cmp.Diff(want, loadKernel(t, openAt(t, crashed, Options{}))); d != "" {
		t.Errorf("state after a crash between batches (-want +got):\n%s", d)
	}
	flush(t, s)
	want.Threads = []ThreadRow{f.thread("late", "org")}
	if d := cmp.Diff(want, loadKernel(t, s)); d != "" {
		t.Errorf("state after the second batch (-want +got):\n%s", d)
	}
}

// TestKernelWritesBegunAfresh: a thread created (CreateThread) and a history
// begun (AppendSlot at index 0) in a batch have nothing committed, so their
// end within the batch writes nothing, not even a DELETE — while every row
// committed before, by an earlier batch or an earlier incarnation of the
// same ids, is still deleted.
func TestKernelWritesBegunAfresh(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	seg := SegmentRow{Thread: "t1", Index: 0, Slots: []int{0}, Tier: "folded", Summary: "s", Changed: f.at}
	type write func(s *Store) error
	create := func(id string) write { return func(s *Store) error { return s.CreateThread(f.thread(id, "org")) } }
	put := func(id string) write { return func(s *Store) error { return s.PutThread(f.thread(id, "org")) } }
	appendSlot := func(id string, i int) write {
		return func(s *Store) error { return s.AppendSlot(f.slot(id, i, "<a/>")) }
	}
	putSlot := func(id string, i int) write { return func(s *Store) error { return s.PutSlot(f.slot(id, i, "<a/>")) } }
	putSeg := func(s *Store) error { return s.PutSegment(seg) }
	end := func(id string) write {
		return func(s *Store) error {
			return errors.Join(s.DeleteSlots(id), s.DeleteSegments(id), s.DeleteThreads([]string{id}))
		}
	}
	tests := []struct {
		name   string
		before []write // committed in an earlier batch
		batch  []write // one batch, after an unrelated watcher upsert
		// statements the batch may take beyond the watcher's batch alone.
		extra int64
		want  kernelState
	}{{
		name:  "begun and ended in the batch: no statement",
		batch: []write{create("t1"), appendSlot("t1", 0), putSeg, appendSlot("t1", 1), end("t1")},
	}, {
		name:  "put, not created: its DELETEs run",
		batch: []write{put("t1"), putSlot("t1", 0), end("t1")},
		extra: 3,
	}, {
		name:   "an earlier incarnation ended in the batch is still deleted",
		before: []write{put("t1"), putSlot("t1", 0), putSlot("t1", 1), putSeg},
		batch:  []write{end("t1"), create("t1"), appendSlot("t1", 0), end("t1")},
		extra:  3,
	}, {
		name:   "created in an earlier batch: deleted",
		before: []write{create("t1"), appendSlot("t1", 0), putSeg},
		batch:  []write{end("t1")},
		extra:  3,
	}, {
		name:   "a history appended to, not begun: deleted",
		before: []write{put("t1"), putSlot("t1", 0)},
		batch:  []write{appendSlot("t1", 1), end("t1")},
		extra:  3,
	}, {
		name:  "begun afresh and kept",
		batch: []write{create("t1"), appendSlot("t1", 0), putSeg},
		extra: 3,
		want:  kernelState{Threads: []ThreadRow{f.thread("t1", "org")}, Slots: []SlotRow{f.slot("t1", 0, "<a/>")}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := batchedStore(t)
			for _, w := range tt.before {
				must(t, w(s))
			}
			flush(t, s)
			statements := s.Statements()
			must(t, s.PutWatcher(f.watcher("alone", "x", false)))
			flush(t, s)
			alone := s.Statements() - statements
			must(t, s.DeleteWatcher("alone"))
			flush(t, s)

			statements = s.Statements()
			must(t, s.PutWatcher(f.watcher("w", "x", false)))
			for _, w := range tt.batch {
				must(t, w(s))
			}
			flush(t, s)
			if got := s.Statements() - statements - alone; got != tt.extra {
				t.Errorf("the batch took %d statements beyond an upsert's batch, want %d", got, tt.extra)
			}
			tt.want.Watchers = []WatcherRow{f.watcher("w", "x", false)}
			if d := cmp.Diff(tt.want, loadKernel(t, s)); d != "" {
				t.Errorf("kernel state (-want +got):\n%s", d)
			}
			segs, err := s.LoadSegments()
			must(t, err)
			if wantSegs := len(tt.want.Slots); len(segs) != wantSegs {
				t.Errorf("segments left: %+v, want %d", segs, wantSegs)
			}
		})
	}
}

// TestKernelCrashAfterFreshBatches: with CreateThread and AppendSlot, a
// crash between batches still restores exactly the state live at the last
// commit: a thread begun and ended in the committed batch is absent, one
// begun there and ended in the lost batch is present with its history, and
// an earlier incarnation ended and begun again in the committed batch is
// the new one.
func TestKernelCrashAfterFreshBatches(t *testing.T) {
	f := kernelFixture{at: newFakeClock().Now()}
	s, dir := batchedStore(t)
	must(t, s.CreateThread(f.thread("again", "org", "old")))
	must(t, s.AppendSlot(f.slot("again", 0, "<old/>")))
	must(t, s.AppendSlot(f.slot("again", 1, "<old/>")))
	flush(t, s)

	must(t, s.CreateThread(f.thread("short", "org")))
	must(t, s.AppendSlot(f.slot("short", 0, "<s/>")))
	must(t, s.CreateThread(f.thread("spans", "org")))
	must(t, s.AppendSlot(f.slot("spans", 0, "<a/>")))
	must(t, errors.Join(s.DeleteSlots("again"), s.DeleteThreads([]string{"again"})))
	must(t, s.CreateThread(f.thread("again", "org", "new")))
	must(t, s.AppendSlot(f.slot("again", 0, "<new/>")))
	must(t, errors.Join(s.DeleteSlots("short"), s.DeleteThreads([]string{"short"})))
	flush(t, s)
	// The next batch stays queued: BatchDelay is an hour.
	must(t, errors.Join(s.DeleteSlots("spans"), s.DeleteThreads([]string{"spans"})))
	crashed := copyCommitted(t, dir)

	want := kernelState{Threads: []ThreadRow{f.thread("again", "org", "new"), f.thread("spans", "org")},
		Slots: []SlotRow{f.slot("again", 0, "<new/>"), f.slot("spans", 0, "<a/>")}}
	if d := cmp.Diff(want, loadKernel(t, openAt(t, crashed, Options{}))); d != "" {
		t.Errorf("state after a crash between batches (-want +got):\n%s", d)
	}
	flush(t, s)
	want = kernelState{Threads: []ThreadRow{f.thread("again", "org", "new")}, Slots: []SlotRow{f.slot("again", 0, "<new/>")}}
	if d := cmp.Diff(want, loadKernel(t, s)); d != "" {
		t.Errorf("state after the last batch (-want +got):\n%s", d)
	}
}
