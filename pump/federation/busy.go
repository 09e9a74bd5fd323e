package federation

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// ReasonBusy marks a nack of a call this side was too busy to take
// (pump.ErrBusy): nothing of it was kept — not journaled, not recorded as
// received — so the call is refused, not delivered, and the caller may
// make it again once the nack's retry hint (frame.RetryAfter) has passed.
// The caller's error then matches pump.ErrBusy and carries the hint (a
// *pump.BusyError).
const ReasonBusy = "busy"

// RefusedBusy is the Observer reason of a call refused as busy: by the
// pump's early word (pump.Pump.Refusing) before anything of it was kept,
// or by its admission.
const RefusedBusy = "busy"

// refusingCall returns the refusal the pump gives a new message for
// e's target right now (pump.Pump.Refusing: its <to>, else the listeners
// its root tag reaches): busy, or while its storage cannot commit; nil
// when it would not refuse it so. It is asked
// once the call's signature verified and it is known to be new here —
// neither a copy being injected nor one received before, which are
// acknowledged, never refused — and before anything of it is recorded or
// journaled: a peer flooding a busy listener costs the verification and a
// lookup per call.
func (g *gateway) refusingCall(e *envelope) (target string, err error) {
	p := g.m.opts.Pump
	if e.To != "" {
		return e.To, p.Refusing(e.To)
	}
	targets, rerr := p.Resolve("", e.PayloadNS, e.PayloadName, true)
	if rerr != nil {
		return "", nil // the pump answers that as ever
	}
	for _, t := range targets {
		if err := p.Refusing(t); err != nil {
			return t, err
		}
	}
	return "", nil
}

// refuseBusy nacks call e, refused as busy with err (a *pump.BusyError),
// with ReasonBusy and the retry hint; early says the pump's early word
// refused it (counted there too: pump.Pump.RefusedEarly). Logged through
// the link's refusals: a line a minute, not one a call. A refusal while
// the storage cannot commit (pump.ErrCannotJournal) is nacked by
// refuseStorage instead.
func (g *gateway) refuseBusy(c *conn, e *envelope, target string, err error, early bool) {
	if errors.Is(err, pump.ErrCannotJournal) {
		g.refuseStorage(c, e, err) // the pump's word too, not a busy one
		return
	}
	text, retry := busyAnswer(err)
	if early {
		g.m.opts.Pump.RefusedEarly(target)
	}
	c.refusedEnvelope(RefusedBusy, "federation: call from the peer refused: busy", "id", e.Link.ID, "root", e.PayloadName,
		"error", err)
	g.m.refusal(g.name, RefusedBusy)
	c.acks.send(frame{Type: frameNack, ID: e.Link.ID, Error: text, Reason: ReasonBusy, RetryAfter: retry})
}

// busyAnswer is the nack text and retry hint (whole seconds, at least 1)
// of a busy refusal: what the buses answer ("Organism busy: listener echo
// busy").
func busyAnswer(err error) (text string, retryAfter int) {
	text, retryAfter = "Organism busy", 1
	if b, ok := errors.AsType[*pump.BusyError](err); ok {
		text += ": " + b.Reason
		retryAfter = max(1, int(math.Ceil(b.RetryAfter.Seconds())))
	}
	return text, retryAfter
}

// busyRefusal is the error of a call the peer nacked as busy: it matches
// ErrRefused and pump.ErrBusy, and carries the peer's retry hint.
func busyRefusal(gateway, why string, retryAfter int) error {
	return fmt.Errorf("%w: gateway %s: %w", ErrRefused, gateway,
		&pump.BusyError{Reason: "peer: " + why, RetryAfter: time.Duration(max(1, retryAfter)) * time.Second})
}
