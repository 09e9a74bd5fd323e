package federation

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
)

// TestRecentAnswersOnlyWithinItsWindow: memory answers for envelopes sent
// from the manager's start on and within recentWindow of now, never for
// older ones (the tables do).
func TestRecentAnswersOnlyWithinItsWindow(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name      string
		sent, now time.Time
		want      bool
	}{
		{"just sent", start.Add(time.Second), start.Add(time.Second + time.Millisecond), true},
		{"sent ahead of the clock", start.Add(time.Minute), start.Add(time.Second), true},
		{"sent before the start", start.Add(-time.Millisecond), start.Add(time.Second), false},
		{"sent longer ago than the window", start.Add(time.Second), start.Add(2*time.Second + recentWindow), false},
		{"at the window's edge", start.Add(time.Minute), start.Add(time.Minute + recentWindow), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecent(start)
			if got := r.seenCovers(tc.sent, tc.now); got != tc.want {
				t.Fatalf("seenCovers = %v, want %v", got, tc.want)
			}
			if _, got := r.receivedState("conv", tc.sent, tc.now); got != tc.want {
				t.Fatalf("receivedState answers = %v, want %v", got, tc.want)
			}
			if _, got := r.checkSeen([32]byte{1}, tc.sent, tc.now); got != tc.want {
				t.Fatalf("checkSeen answers = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRecentRecordsWhatTheTablesWill: a hash is a copy once recorded; a
// conversation's call goes new → uncertain (begun) → done, and back to new
// when forgotten (its injection refused); entries leave with the window,
// after which memory no longer answers for their envelopes.
func TestRecentRecordsWhatTheTablesWill(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	r := newRecent(start)
	sent, now := start.Add(time.Second), start.Add(2*time.Second)
	h := sha256.Sum256([]byte("answer"))
	if dup, ok := r.checkSeen(h, sent, now); !ok || dup {
		t.Fatalf("first copy: dup %v ok %v", dup, ok)
	}
	if dup, ok := r.checkSeen(h, sent, now); !ok || !dup {
		t.Fatalf("second copy: dup %v ok %v, want a duplicate", dup, ok)
	}
	steps := []struct {
		do   func()
		want int
	}{
		{func() {}, callNew},
		{func() { r.begin("c", sent) }, callUncertain},
		{func() { r.done("c") }, callDone},
		{func() { r.begin("c", sent) }, callDone}, // a copy never undoes done
		{func() { r.forget("c") }, callNew},
		{func() { r.begin("c", sent) }, callUncertain},
	}
	for i, s := range steps {
		s.do()
		if got, ok := r.receivedState("c", sent, now); !ok || got != s.want {
			t.Fatalf("step %d: state %d (answers %v), want %d", i, got, ok, s.want)
		}
	}
	later := sent.Add(recentWindow + 2*time.Second)
	if _, ok := r.checkSeen(h, sent, later); ok {
		t.Fatal("memory answers for an envelope sent before its window")
	}
	if len(r.seen) != 0 || len(r.received) != 0 || len(r.buckets) != 0 {
		t.Fatalf("entries outlive the window: %d seen, %d received, %d buckets", len(r.seen), len(r.received), len(r.buckets))
	}
}

// TestRecentLoadsWhatMayBeCopied: at the start, memory takes the seen and
// received rows written since the start minus futureSkew (a copy of their
// envelopes may be sent within the window) and none older.
func TestRecentLoadsWhatMayBeCopied(t *testing.T) {
	d, err := openDB(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	start := time.Now()
	fresh, old := sha256.Sum256([]byte("fresh")), sha256.Sum256([]byte("old"))
	for _, w := range []struct {
		hash [32]byte
		conv string
		at   time.Time
		done bool
	}{
		{fresh, "fresh-done", start.Add(-futureSkew + time.Second), true},
		{old, "old", start.Add(-futureSkew - time.Second), true},
		{[32]byte{}, "fresh-uncertain", start.Add(-time.Second), false},
	} {
		if w.hash != ([32]byte{}) {
			// Sent as far ahead of the receiver's clock as it may be.
			d.markSeenHash(w.hash, w.at.Add(futureSkew), w.at, func(err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
		d.serveBegin(w.conv, "g", "lt", w.at, true, func(err error) {
			if err != nil {
				t.Error(err)
			}
		})
		if w.done {
			d.callInjected(w.conv, func(err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	r := newRecent(start)
	if err := r.load(d); err != nil {
		t.Fatal(err)
	}
	sent, now := start.Add(time.Millisecond), start.Add(time.Second)
	if dup, ok := r.checkSeen(fresh, sent, now); !ok || !dup {
		t.Fatalf("a hash written since start-futureSkew: dup %v ok %v, want a duplicate", dup, ok)
	}
	if _, ok := r.seen[old]; ok {
		t.Fatal("a hash written before start-futureSkew was loaded")
	}
	for conv, want := range map[string]int{"fresh-done": callDone, "fresh-uncertain": callUncertain, "old": callNew} {
		if got, ok := r.receivedState(conv, sent, now); !ok || got != want {
			t.Errorf("%s: state %d (answers %v), want %d", conv, got, ok, want)
		}
	}
}

// TestCancelCopyRefusedAcrossRestart: an envelope that is not a call (here
// a cancel) is refused as a copy while its hash is in memory, and after a
// restart too: sent a minute ahead of the callee's clock, it is within the
// restarted callee's window, which memory answers for from the rows loaded
// at the start.
func TestCancelCopyRefusedAcrossRestart(t *testing.T) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	c1 := newCalleeIn(t, aKey, bKey, dir, nil)
	r1, err := dialRaw(t, c1, aKey)
	if err != nil {
		t.Fatal(err)
	}
	cancel := (&envelope{From: "a", To: "echo", Thread: "t", Link: link{ID: "cancel-1", Kind: KindCancel,
		Ref: "never-called", Sent: time.Now().Add(time.Minute)}})
	env, err := envsig.Sign(aKey, cancel.build())
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r1.send(env); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("first copy: %+v", ack)
	}
	if ack, _ := r1.send(env); ack.Type != frameAck || !ack.Duplicate {
		t.Fatalf("second copy: %+v, want a duplicate", ack)
	}
	stopCallee(t, c1)
	c2 := newCalleeIn(t, aKey, bKey, dir, nil)
	r2, err := dialRaw(t, c2, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r2.send(env); ack.Type != frameAck || !ack.Duplicate {
		t.Fatalf("copy after a restart: %+v, want a duplicate", ack)
	}
	stopCallee(t, c2)
}

// TestUnknownKindRefusedEveryTime: an envelope of a kind nobody processes
// is refused, and so is its copy: its hash is recorded nowhere, in memory
// neither.
func TestUnknownKindRefusedEveryTime(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	odd := &envelope{From: "a", To: "echo", Thread: "t", Link: link{ID: "odd-1", Kind: "odd", Ref: "x", Sent: time.Now()}}
	env, err := envsig.Sign(aKey, odd.build())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if ack, _ := r.send(env); ack.Type != frameNack || ack.Error != "unknown kind" {
			t.Fatalf("copy %d: %+v, want a refusal of its kind", i, ack)
		}
	}
}
