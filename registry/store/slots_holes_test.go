package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLoadSlotsDropsHoles: a data directory whose context history has a
// hole — written by a build that lost slot writes to a full disk — still
// opens: LoadSlots returns each thread's slots up to the hole (what the
// context buffer's Restore accepts, instead of refusing the whole start
// with "slot index 5 at position 3: invalid slot"), and the slots beyond
// it are deleted, so the thread's next slots do not meet them.
func TestLoadSlotsDropsHoles(t *testing.T) {
	s, dir := openTest(t, Options{})
	at := time.Date(2026, 11, 29, 14, 41, 33, 0, time.UTC)
	for _, r := range []struct {
		thread string
		idx    []int
	}{{"a", []int{0, 1, 2, 5, 6}}, {"b", []int{0, 1}}, {"c", []int{3, 4}}} {
		for _, i := range r.idx {
			must(t, s.PutSlot(SlotRow{Thread: r.thread, Index: i, Raw: []byte("m"), Time: at}))
		}
	}
	must(t, s.Flush(t.Context()))
	must(t, s.Close())

	index := func(rows []SlotRow) map[string][]int {
		got := map[string][]int{}
		for _, r := range rows {
			got[r.Thread] = append(got[r.Thread], r.Index)
		}
		return got
	}
	want := map[string][]int{"a": {0, 1, 2}, "b": {0, 1}}
	s = openAt(t, dir, Options{})
	rows, err := s.LoadSlots()
	must(t, err)
	if diff := cmp.Diff(want, index(rows)); diff != "" {
		t.Fatalf("LoadSlots over holes (-want +got):\n%s", diff)
	}
	must(t, s.Close())

	s = openAt(t, dir, Options{})
	var stored int
	must(t, s.rdb.QueryRow(`SELECT count(*) FROM slots`).Scan(&stored))
	if stored != 5 {
		t.Errorf("%d slot rows stored after the repair, want the 5 kept", stored)
	}
}
