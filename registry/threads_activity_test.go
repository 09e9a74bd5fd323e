package registry

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// activitySink is a recordingThreadSink that also records ThreadsTouched.
type activitySink struct {
	*recordingThreadSink
	mu      sync.Mutex
	touched map[string]time.Time
}

// ThreadsTouched records each thread's reported last activity.
func (s *activitySink) ThreadsTouched(recs []ThreadRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.touched[r.ID] = r.Touched
	}
}

// TestActivityAcrossRestart: SaveActivity reports the threads used since
// the last report (not those only created since: their creation told the
// sink), and Restore gives each thread its persisted last activity, so its
// idle time and TTL run on across a restart instead of starting again.
func TestActivityAcrossRestart(t *testing.T) {
	clk := newFakeClock()
	sink := &activitySink{recordingThreadSink: newRecordingThreadSink(), touched: map[string]time.Time{}}
	th := newTestThreads(clk, sink) // TTL 10 minutes
	start := clk.Now()
	busy := mustBegin(t, th, "client", "a")
	idle := mustBegin(t, th, "client", "b")
	clk.Advance(4 * time.Minute)
	th.Touch(busy)
	lastUse := clk.Now()
	clk.Advance(time.Minute)
	fresh := mustBegin(t, th, "client", "c") // created after the last report, used never since
	if n := th.SaveActivity(start); n != 1 {
		t.Errorf("SaveActivity = %d, want 1 (the busy thread)", n)
	}
	if diff := cmp.Diff(map[string]time.Time{busy: lastUse.UTC()}, sink.touched); diff != "" {
		t.Errorf("activity reported (-want +got):\n%s", diff)
	}
	if n := th.SaveActivity(clk.Now()); n != 0 {
		t.Errorf("SaveActivity with nothing used since = %d, want 0", n)
	}

	recs := th.Records()
	for i := range recs { // as the store keeps them
		if at, ok := sink.touched[recs[i].ID]; ok {
			recs[i].Touched = at
		}
	}
	clk.Advance(3 * time.Minute) // the organism is down
	restored := newTestThreads(clk, nil)
	if err := restored.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	got := map[string]time.Time{}
	for _, r := range restored.Records() {
		got[r.ID] = r.Touched
	}
	want := map[string]time.Time{busy: lastUse.UTC(), idle: start.UTC(), fresh: start.Add(5 * time.Minute).UTC()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("last activity after the restart (-want +got):\n%s", diff)
	}
	// Ten minutes after its last use (8 before the restart), the idle
	// thread goes; the others, used later, stay.
	clk.Advance(2 * time.Minute)
	if n := restored.Collect(); n != 1 || restored.Known(idle) || !restored.Known(busy) || !restored.Known(fresh) {
		t.Errorf("Collect 10 minutes after the idle thread's last use = %d; idle live %v, busy %v, fresh %v",
			n, restored.Known(idle), restored.Known(busy), restored.Known(fresh))
	}
}
