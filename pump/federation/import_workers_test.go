package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestPendingCallsHoldNoImportWorker: more callers than the import has
// workers call a peer that answers none of them until every call reached
// it. A call waiting on the peer holds no worker, so every call leaves at
// once — none waits in the import's queue behind the pending ones; a
// caller that gives up still stops its waiting call; and once the peer
// answers, each other caller gets its own answer.
func TestPendingCallsHoldNoImportWorker(t *testing.T) {
	const workers, callers = 2, 8
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	t.Cleanup(func() { // a failed test releases the peer before stopping it
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	entered := make(chan string, callers)
	c.mu.Lock()
	c.entered = entered
	c.mu.Unlock()

	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Gateways: []config.Gateway{{Name: "b",
		RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key), Import: []string{"Echo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	m.workers = workers
	importEcho(t, m)
	m.Start()
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})

	type result struct {
		text, answer, root string
		err                error
	}
	results, killed := make(chan result, callers), make(chan result, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The asker of call-0 gives up while its call waits: its conversation
	// is killed (Ask), which must still stop the call waiting detached.
	giveUp, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	for i := range callers {
		text, askCtx, out := fmt.Sprintf("call-%d", i), ctx, results
		if i == 0 {
			askCtx, out = giveUp, killed
		}
		go func() {
			ev, err := p.Ask(askCtx, "console", "echo", &Echo{Text: text})
			r := result{text: text, err: err}
			if err == nil {
				r.root, r.answer = ev.PayloadName, string(ev.Envelope)
			}
			out <- r
		}()
	}
	var reached []string
	for range callers {
		select {
		case text := <-entered:
			reached = append(reached, text)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d calls reached the peer while the first ones wait (the import has %d workers): %v",
				len(reached), callers, workers, reached)
		}
	}
	stopWaiting()
	select {
	case r := <-killed:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("%s, its asker gone: %v, want context.Canceled", r.text, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the asker that gave up was not answered")
	}
	waitUntil(t, "the killed conversation's call to stop waiting on the peer", func() bool {
		for _, l := range p.Listeners() {
			if l.Name == "echo" {
				return l.Active == callers-1 && len(l.Current) == callers-1
			}
		}
		return false
	})
	close(hold)
	for range callers - 1 {
		r := <-results
		// Each caller gets the answer to its own call (the peer upper-cases it).
		if own := "<Text>" + strings.ToUpper(r.text) + "</Text>"; r.err != nil || r.root != "Echoed" ||
			!strings.Contains(r.answer, own) {
			t.Errorf("%s: answered <%s> %s, %v; want its own <Echoed> holding %s", r.text, r.root, r.answer, r.err, own)
		}
	}
	slices.Sort(reached)
	var all []string
	for i := range callers {
		all = append(all, fmt.Sprintf("call-%d", i))
	}
	slices.Sort(all)
	if diff := cmp.Diff(all, reached); diff != "" {
		t.Errorf("the calls the peer received (-want +got):\n%s", diff)
	}
}

// TestCycleDeeperThanImportWorkers: calls nested in a cycle through both
// organisms' imports, more of them through each import than it has
// workers, complete: a nested call never waits in the queue for a worker
// only its own answer would free.
func TestCycleDeeperThanImportWorkers(t *testing.T) {
	const workers, stop = 2, 9 // 5 nested calls through each import
	cp := newCyclePairWorkers(t, 64, stop, workers)
	if _, err := cp.ask(t); err != nil {
		t.Fatalf("the cycle of %d calls, %d workers per import: %v", stop, workers, err)
	}
	if got := cp.handled.Load(); got != stop+1 {
		t.Errorf("listeners handled %d calls, want %d", got, stop+1)
	}
}
