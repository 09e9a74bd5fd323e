package pump_test

import (
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestPauseRacesChange: an operator pauses or resumes a listener while a
// reload replaces it (Pause or Resume concurrent with Change). Whichever
// comes first, once both returned the current version is in the state
// the operator asked for: a pause is not lost on the new version, and a
// resume does not leave the new version paused for ever. Each round
// starts from the opposite state.
func TestPauseRacesChange(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "target", pr))
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	var lost []int
	for i := range rounds {
		pause := i%2 == 0
		next := sink[Ping](t, "target", pr)
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			if _, err := p.Change(pump.ListenerChange{Remove: []string{"target"}, Add: []pump.Listener{next}}); err != nil {
				t.Errorf("Change: %v", err)
			}
		})
		wg.Go(func() {
			<-start
			op := p.Resume
			if pause {
				op = p.Pause
			}
			if err := op("target"); err != nil {
				t.Errorf("pause %v: %v", pause, err)
			}
		})
		close(start)
		wg.Wait()
		if p.Paused("target") != pause {
			lost = append(lost, i)
		}
		// Every round begins from the state the previous one asked for.
		if p.Paused("target") != pause {
			op := p.Resume
			if pause {
				op = p.Pause
			}
			if err := op("target"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d rounds left the current version in the wrong state (first rounds: %v)", len(lost), rounds,
			lost[:min(5, len(lost))])
	}
}

// TestHaltRacesChange: a halt or its lift racing a reload that replaces a
// listener leaves the new version halted exactly while the halt lasts.
func TestHaltRacesChange(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "target", pr))
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	halted := func() bool {
		for _, l := range p.Listeners() {
			if l.Name == "target" {
				return l.Halted
			}
		}
		t.Fatal("no listener target")
		return false
	}
	var wrong []int
	for i := range rounds {
		halt := i%2 == 0
		next := sink[Ping](t, "target", pr)
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			if _, err := p.Change(pump.ListenerChange{Remove: []string{"target"}, Add: []pump.Listener{next}}); err != nil {
				t.Errorf("Change: %v", err)
			}
		})
		wg.Go(func() {
			<-start
			if !halt {
				p.Unhalt()
				return
			}
			if _, err := p.Halt(pump.HaltAll); err != nil {
				t.Errorf("Halt: %v", err)
			}
		})
		close(start)
		wg.Wait()
		if halted() != halt {
			wrong = append(wrong, i)
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d of %d rounds left the current version in the wrong halt state (first rounds: %v)", len(wrong), rounds,
			wrong[:min(5, len(wrong))])
	}
}
