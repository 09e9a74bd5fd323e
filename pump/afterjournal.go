package pump

import (
	"context"
	"sync"
)

// AfterJournal runs fn once the outputs of the handler call ctx belongs to
// (the context the pump passed the handler) are journaled: after the
// handler returned, once the pump has queued into the journal the records
// of every message it emitted and of what they yielded (dead letters,
// <huh>s), and the message's delivery mark where that is due. A handler
// that returns an error, panics or answers nothing counts too: fn then
// runs once what the pump journals about that is queued. With a journal
// that commits in the order it is given writes (the organism's store), a
// write fn queues on the same journal commits with those records or after
// them: a handler acknowledges there what it may acknowledge only once its
// answer cannot be lost by a crash. fn runs once, on a pump goroutine, and
// must not block.
//
// fn never runs when nothing the handler returned is journaled: an
// immediate shutdown drops the handling (Recover re-delivers the message),
// a halt puts the message back in its queue, an abandoned handler's
// response is discarded (Options.CancelGrace; save a halted handling the
// handler settled, whose response is processed when it returns), and outputs the shutting
// pump could no longer process are dropped. Neither does one registered
// after the handler returned. Without a journal, fn runs at the same point,
// once the pump has processed what the handler returned (its outputs
// passed the ingress stages), so that a halt drops it all the same. With a
// context the pump did not give a handler, fn runs at once.
func AfterJournal(ctx context.Context, fn func()) {
	AfterJournalOr(ctx, fn, nil)
}

// AfterJournalOr is AfterJournal with dropped, which runs instead of fn
// when the pump drops the handling that registered it: a halt (the message
// waits in its queue and is handled again after Unhalt, by a handling with
// a context of its own), an immediate shutdown, an abandoned handler — or
// one registered after the handler returned. A handler that holds
// something it may release only once its answer is durable keeps it there
// for the next handling of the message. dropped (nil: nothing) runs at
// most once, never together with fn, on the goroutine that drops the
// handling (or in the call), and must not block. In a shutdown whose pump
// drops outputs it could no longer process neither may run. With a
// context the pump did not give a handler, fn runs at once.
func AfterJournalOr(ctx context.Context, fn, dropped func()) {
	if fn == nil {
		return
	}
	h, ok := ctx.Value(handlingKey{}).(*handling)
	if !ok || h == nil {
		fn()
		return
	}
	if !h.after.add(fn, dropped) && dropped != nil {
		dropped()
	}
}

// afterJournal holds what a handler call asked to run once its outputs are
// journaled (AfterJournal) and counts what that waits for.
type afterJournal struct {
	mu  sync.Mutex
	fns []func()
	// drops run instead of fns when the handling is dropped (nil entries:
	// nothing to run).
	drops []func()
	// refs counts the outputs not journaled yet, plus one for the handling
	// until the pump has dealt with what the handler returned.
	refs int
	// closed is set once the handler returned: no more fns are taken.
	closed bool
}

// add takes fn, and dropped to run instead if the handling is dropped,
// while the handler runs and reports whether it did; later ones are
// refused.
func (a *afterJournal) add(fn, dropped func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.fns = append(a.fns, fn)
	a.drops = append(a.drops, dropped)
	return true
}

// take closes a to further fns once the handler returned and returns it,
// holding the handling's reference, or nil when it holds nothing to run.
func (a *afterJournal) take() *afterJournal {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if len(a.fns) == 0 {
		return nil
	}
	a.refs = 1
	return a
}

// drop closes a and forgets its fns: nothing of the handling is journaled.
// It runs their drops instead, in the order they were added.
func (a *afterJournal) drop() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.closed = true
	drops := a.drops
	a.fns, a.drops = nil, nil
	a.mu.Unlock()
	for _, d := range drops {
		if d != nil {
			d()
		}
	}
}

// retain adds a reference (an output emitted) and returns a.
func (a *afterJournal) retain() *afterJournal {
	if a != nil {
		a.mu.Lock()
		a.refs++
		a.mu.Unlock()
	}
	return a
}

// release drops a reference; the last one runs the fns, in the order they
// were added.
func (a *afterJournal) release() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.refs--
	var fns []func()
	if a.refs == 0 {
		fns, a.fns, a.drops = a.fns, nil, nil
	}
	a.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
