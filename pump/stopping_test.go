package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestHandlerEndedByTheStop: a handler that says the organism's stop ended
// it (an error wrapping pump.ErrStopping, as a federated call waiting on
// its peer returns) is neither answered nor failed when its message is
// journaled: the message is left undelivered, for Recover to re-deliver at
// the next start, and its sender hears nothing. A message that is not
// journaled cannot be re-delivered: its sender gets a <huh> that carries
// the handler's error.
func TestHandlerEndedByTheStop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		journaled bool
	}{
		{"journaled", true},
		{"not journaled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listenerOf(t, "remote", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, fmt.Errorf("gateway b: the organism stopped while the call waited: %w", pump.ErrStopping)
			})
			l.Remote = true
			var j *markJournal
			obs := &handlerSamples{}
			opts := pump.Options{Observer: obs}
			if tc.journaled {
				j = newMarkJournal()
				opts.Journal = j
			}
			p := startPump(t, opts, l)
			rec := newRecorder()
			mustSend(t, p, client, "remote", &Job{Label: "waiting"}, rec)
			if !tc.journaled {
				huh := rec.waitFor(t, "the huh", kind(pump.EventHuh))
				if !slices.ContainsFunc(huh.Diagnostics, func(d string) bool {
					return strings.Contains(d, "the organism stopped while the call waited")
				}) {
					t.Errorf("the huh does not carry the handler's error: %q", huh.Diagnostics)
				}
				if diff := cmp.Diff([][2]bool{{true, false}}, obs.get()); diff != "" {
					t.Errorf("the handler's samples [failed, interrupted] (-want +got):\n%s", diff)
				}
				return
			}
			poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
			journaled, delivered := j.deliveredText("waiting")
			if diff := cmp.Diff([2]bool{true, false}, [2]bool{journaled, delivered}); diff != "" {
				t.Errorf("the message the stop ended [journaled, delivered] (-want +got):\n%s", diff)
			}
			if n := rec.count(kind(pump.EventHuh)); n != 0 {
				t.Errorf("the sender got %d huh(s) for a handling the stop ended:\n%s", n, describe(rec.snapshot()))
			}
			if diff := cmp.Diff([][2]bool{{false, true}}, obs.get()); diff != "" {
				t.Errorf("the handler's samples [failed, interrupted] (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrStoppingIsAShutdown: ErrStopping is an ErrShutdown, and says
// what stops.
func TestErrStoppingIsAShutdown(t *testing.T) {
	err := fmt.Errorf("gateway b: %w", pump.ErrStopping)
	if !errors.Is(err, pump.ErrShutdown) || !errors.Is(err, pump.ErrStopping) {
		t.Errorf("%v is not ErrStopping and ErrShutdown", err)
	}
	if diff := cmp.Diff("gateway b: pump: the organism is stopping", err.Error()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

// handlerSamples records [Failed, Interrupted] of each handler stage sample.
type handlerSamples struct {
	mu sync.Mutex
	s  [][2]bool
}

func (h *handlerSamples) ObserveStage(s pump.StageSample) {
	if s.Stage != pump.StageHandler {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.s = append(h.s, [2]bool{s.Failed, s.Interrupted})
}

func (h *handlerSamples) get() [][2]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.s)
}
