package store

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestThreads(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{})
	at := clock.Now()
	rows := []ThreadRow{
		{ID: "t1", Path: []string{"org", "console", "greeter"}, Created: at, Touched: at},
		{ID: "t2", Parent: "t1", Path: []string{"org", "a.b.c"}, Created: at.Add(time.Nanosecond), Ref: "call_<1>",
			Profile: "calc&readers"},
		{ID: "t3", Path: []string{"org"}, Created: at.Add(2 * time.Nanosecond)},
	}
	for _, r := range rows {
		must(t, s.PutThread(r))
	}
	// Replace t1 (touched later, longer path), delete t3 and an unknown id.
	rows[0].Path = append(rows[0].Path, "shouter")
	rows[0].Touched = at.Add(time.Hour)
	must(t, s.PutThread(rows[0]))
	must(t, s.DeleteThreads([]string{"t3", "nope"}))
	must(t, s.DeleteThreads(nil))
	flush(t, s)
	got, err := s.LoadThreads()
	must(t, err)
	if d := cmp.Diff(rows[:2], got); d != "" {
		t.Errorf("LoadThreads (-want +got):\n%s", d)
	}
	if err := s.PutThread(ThreadRow{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutThread without id = %v, want ErrInvalid", err)
	}
	if err := s.PutThread(ThreadRow{ID: "x", Created: time.Date(1, 2, 3, 0, 0, 0, 0, time.UTC)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutThread with an unstorable time = %v, want ErrInvalid", err)
	}
}

func TestWatchers(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{})
	w1 := WatcherRow{ID: "w1", Thread: "t1", Issuer: "planner", WaitFor: "ToolResult", FromListener: "calc",
		Description: "wait for calc", Created: clock.Now()}
	w2 := WatcherRow{ID: "w2", Thread: "t1", Issuer: "planner", WaitFor: "Other", Created: clock.Now().Add(time.Second)}
	must(t, s.PutWatcher(w1))
	must(t, s.PutWatcher(w2))
	w1.Raised, w1.TriggeredFrom = true, "calc"
	must(t, s.PutWatcher(w1))
	must(t, s.DeleteWatcher("w2"))
	must(t, s.DeleteWatcher("absent"))
	flush(t, s)
	got, err := s.LoadWatchers()
	must(t, err)
	if d := cmp.Diff([]WatcherRow{w1}, got); d != "" {
		t.Errorf("LoadWatchers (-want +got):\n%s", d)
	}
	if err := s.PutWatcher(WatcherRow{ID: "w"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutWatcher without thread = %v, want ErrInvalid", err)
	}
}

func TestSlots(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{})
	slot := func(thread string, i int) SlotRow {
		return SlotRow{Thread: thread, Index: i, From: "a", To: "b", PayloadType: "Greeting",
			Raw: []byte("<Greeting/>"), Time: clock.Now().Add(time.Duration(i)), OwnName: "b", IsSelfCall: i%2 == 1,
			InReplyTo: map[bool]string{true: "call_x"}[i == 2]}
	}
	want := []SlotRow{slot("t1", 0), slot("t1", 1), slot("t1", 2)}
	raw := []byte("<Mutable/>")
	for _, r := range append(want, slot("t2", 0), slot("t2", 1)) {
		must(t, s.PutSlot(r))
	}
	replaced := want[1]
	replaced.Raw = raw
	must(t, s.PutSlot(replaced))
	raw[0] = 'X' // PutSlot copied Raw
	want[1].Raw = []byte("<Mutable/>")
	must(t, s.DeleteSlots("t2"))
	flush(t, s)
	got, err := s.LoadSlots()
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LoadSlots (-want +got):\n%s", d)
	}
	for _, bad := range []SlotRow{{Index: 1}, {Thread: "t", Index: -1}} {
		if err := s.PutSlot(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutSlot(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestSlotRawOwnership: PutSlot and AppendSlot copy Raw (the caller may
// reuse its buffer at once); AppendSharedSlot keeps it (the caller handed
// it over), and the three commit the same rows.
func TestSlotRawOwnership(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{})
	slot := func(thread string, raw []byte) SlotRow {
		return SlotRow{Thread: thread, From: "a", To: "b", PayloadType: "Greeting", Raw: raw, Time: clock.Now()}
	}
	put, appended, shared := []byte("<Put/>"), []byte("<Appended/>"), []byte("<Shared/>")
	must(t, s.PutSlot(slot("t1", put)))
	must(t, s.AppendSlot(slot("t2", appended)))
	must(t, s.AppendSharedSlot(slot("t3", shared)))
	put[1], appended[1] = 'X', 'X' // copied: the rows keep what was passed
	flush(t, s)
	got, err := s.LoadSlots()
	must(t, err)
	want := []SlotRow{slot("t1", []byte("<Put/>")), slot("t2", []byte("<Appended/>")), slot("t3", []byte("<Shared/>"))}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LoadSlots (-want +got):\n%s", d)
	}
	if err := s.AppendSharedSlot(SlotRow{Index: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("AppendSharedSlot without a thread = %v, want ErrInvalid", err)
	}
}

// TestOpenDropsWatchersThreadIndex: a database of an earlier binary, with
// the index on watchers.thread no query reads, loses it at Open and keeps
// its watchers.
func TestOpenDropsWatchersThreadIndex(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.PutWatcher(WatcherRow{ID: "w1", Thread: "t1", Created: time.Unix(1, 0)}))
	must(t, s.Close())
	db := rawDB(t, dir)
	if _, err := db.Exec(`CREATE INDEX watchers_thread ON watchers (thread)`); err != nil {
		t.Fatal(err)
	}
	must(t, db.Close())

	s = openAt(t, dir, Options{})
	ws, err := s.LoadWatchers()
	must(t, err)
	if len(ws) != 1 || ws[0].ID != "w1" {
		t.Fatalf("watchers after reopen = %+v, want w1", ws)
	}
	must(t, s.Close())
	var n int
	must(t, rawDB(t, dir).QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'watchers_thread'`).Scan(&n))
	if n != 0 {
		t.Errorf("watchers_thread index still present after Open")
	}
}

// TestWatcherRaisedInPlace: a watcher written again in a later batch (it
// was raised) has every column rewritten, and stays the one row of its id.
func TestWatcherRaisedInPlace(t *testing.T) {
	s, dir := openTest(t, Options{})
	f := kernelFixture{at: time.Unix(100, 0).UTC()}
	w := f.watcher("w1", "t1", false)
	must(t, s.PutWatcher(w))
	must(t, s.PutWatcher(f.watcher("w2", "t1", false)))
	flush(t, s)
	w.Raised, w.TriggeredFrom, w.Description = true, "worker", "done"
	must(t, s.PutWatcher(w))
	flush(t, s)
	var n int
	must(t, rawDB(t, dir).QueryRow(`SELECT count(*) FROM watchers WHERE id = 'w1'`).Scan(&n))
	if n != 1 {
		t.Errorf("%d rows of w1, want 1", n)
	}
	ws, err := s.LoadWatchers()
	must(t, err)
	if len(ws) != 2 || ws[0] != w {
		t.Fatalf("watchers = %+v, want the raised w1 first of two", ws)
	}
}
