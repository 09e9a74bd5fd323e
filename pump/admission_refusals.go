package pump

import (
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// RefusalReason says why a new external message was refused as busy
// (ErrBusy): the reason label of the refusal metric (Pump.Refusals).
type RefusalReason string

// The reasons a new external message is refused as busy.
const (
	// RefusedEarly: a transport answered it busy before reading it, on
	// Pump.Refusing's word (see Pump.RefusedEarly).
	RefusedEarly RefusalReason = "early"
	// RefusedQueueWait: it would have waited at its target longer than
	// Options.MaxQueueWait before its handling started.
	RefusedQueueWait RefusalReason = "queue_wait"
	// RefusedShare: its target held its share of the admission budget
	// (MaxInFlight/8) for as long as it could wait for room, or room there
	// was not expected soon enough to wait for.
	RefusedShare RefusalReason = "share"
	// RefusedPaused and RefusedHalted: RefusedShare at a listener an
	// operator paused or halted, whose backlog so filled its share.
	RefusedPaused RefusalReason = "paused"
	RefusedHalted RefusalReason = "halted"
	// RefusedBudget: the whole in-flight budget (MaxInFlight) was used up.
	RefusedBudget RefusalReason = "budget"
	// RefusedUserShare: its sender's user held its share (MaxInFlight/4).
	RefusedUserShare RefusalReason = "user_share"
	// RefusedIngress: every ingress stage slot stayed busy.
	RefusedIngress RefusalReason = "ingress"
)

// refusalReasons lists every RefusalReason, in the order of the counters.
var refusalReasons = [...]RefusalReason{RefusedEarly, RefusedQueueWait, RefusedShare, RefusedPaused, RefusedHalted,
	RefusedBudget, RefusedUserShare, RefusedIngress}

// refusalKind is a RefusalReason's index in refusalReasons.
type refusalKind uint8

const (
	kindEarly refusalKind = iota
	kindQueueWait
	kindShare
	kindPaused
	kindHalted
	kindBudget
	kindUserShare
	kindIngress
	numRefusalKinds
)

// refusalLogEvery is how often, at most, the pump logs one listener's busy
// refusals: the first of a quiet period at once, the others as one line
// with their count per interval, never one line per message.
const refusalLogEvery = 10 * time.Second

// RefusalCount is how many new external messages were refused as busy, at
// one listener, for one reason, since the pump started.
type RefusalCount struct {
	// Listener is the target's name; "" for a refusal made before the
	// message was read (RefusedBudget, RefusedUserShare, RefusedIngress).
	Listener string
	Reason   RefusalReason
	Count    int64
}

// refusalTally counts one listener's busy refusals, and logs them at most
// once per refusalLogEvery.
type refusalTally struct {
	name   string
	counts [numRefusalKinds]atomic.Int64
	// armed is set while a log line is due (its timer pending): the
	// refusals meanwhile are only counted.
	armed atomic.Bool
	// logged is counts as of the last log line (guarded by refusals.mu).
	logged [numRefusalKinds]int64
}

// refusals is the pump's tally of busy refusals per listener.
type refusals struct {
	tallies sync.Map // listener name → *refusalTally
	every   time.Duration
	log     *slog.Logger
	// mu guards the log lines, timers and stopped.
	mu      sync.Mutex
	timers  map[*refusalTally]*time.Timer
	stopped bool
}

// tally returns name's tally, made on its first refusal.
func (r *refusals) tally(name string) *refusalTally {
	if t, ok := r.tallies.Load(name); ok {
		return t.(*refusalTally)
	}
	t, _ := r.tallies.LoadOrStore(name, &refusalTally{name: name})
	return t.(*refusalTally)
}

// count counts one refusal at listener name and logs it: at once when none
// was logged there within the interval, else with the next line.
func (r *refusals) count(name string, kind refusalKind) {
	t := r.tally(name)
	t.counts[kind].Add(1)
	if t.armed.CompareAndSwap(false, true) {
		r.flush(t)
	}
}

// flush logs t's refusals since its last line and, when there were any,
// arms the next line's timer; with none it disarms t (a refusal counted
// meanwhile arms it again).
func (r *refusals) flush(t *refusalTally) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return // stays armed: nothing is logged after the pump stops
	}
	total, attrs := t.sinceLogged()
	if total == 0 {
		delete(r.timers, t)
		t.armed.Store(false)
		// A refusal counted since sinceLogged found t armed and left its
		// line to this one.
		if total, attrs = t.sinceLogged(); total == 0 || !t.armed.CompareAndSwap(false, true) {
			return
		}
	}
	r.logLocked(t.name, total, attrs)
	if r.timers == nil {
		r.timers = map[*refusalTally]*time.Timer{}
	}
	r.timers[t] = time.AfterFunc(r.every, func() { r.flush(t) })
}

// sinceLogged returns t's refusals since its last log line, in all and as
// slog attributes per reason, and counts them logged (refusals.mu held).
func (t *refusalTally) sinceLogged() (total int64, attrs []any) {
	for k := range numRefusalKinds {
		n := t.counts[k].Load()
		if d := n - t.logged[k]; d > 0 {
			attrs = append(attrs, string(refusalReasons[k]), d)
			total += d
		}
		t.logged[k] = n
	}
	return total, attrs
}

// logLocked writes the log line of total refusals at listener name (attrs:
// per reason; r.mu held).
func (r *refusals) logLocked(name string, total int64, attrs []any) {
	if name == "" {
		name = "(not read)"
	}
	r.log.Warn("messages refused: busy", append([]any{"listener", name, "refused", total, "within", r.every}, attrs...)...)
}

// stop logs what is counted and not logged yet and stops the timers: no
// line comes after it (the pump's shutdown).
func (r *refusals) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	for t, tm := range r.timers {
		tm.Stop()
		if total, attrs := t.sinceLogged(); total > 0 {
			r.logLocked(t.name, total, attrs)
		}
	}
	r.timers = nil
	r.stopped = true
}

// snapshot returns every nonzero count, by listener then reason.
func (r *refusals) snapshot() []RefusalCount {
	var out []RefusalCount
	r.tallies.Range(func(_, v any) bool {
		t := v.(*refusalTally)
		for k := range numRefusalKinds {
			if n := t.counts[k].Load(); n > 0 {
				out = append(out, RefusalCount{Listener: t.name, Reason: refusalReasons[k], Count: n})
			}
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Listener != out[j].Listener {
			return out[i].Listener < out[j].Listener
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// Refusals returns how many new external messages the pump refused as busy
// since it started, per target listener and reason (only nonzero counts,
// sorted by listener then reason): the xmlpipe_messages_refused_total
// metric. Each refusal is also logged, at most one line per listener per
// 10 s with its count, never one per message.
func (p *Pump) Refusals() []RefusalCount { return p.refused.snapshot() }

// RefusedEarly counts a new external message to target that a transport
// answered busy on Pump.Refusing's word, without reading it (see
// Refusals). A transport calls it once it did refuse the message.
func (p *Pump) RefusedEarly(target string) {
	name := target
	if l := p.routes.Load().lookup(target); l != nil {
		name = l.Name
	}
	p.refused.count(name, kindEarly)
}

// countRefusal counts err, the refusal of a new external message at l
// (nil: before its target was known), when it is a busy one.
func (p *Pump) countRefusal(l *listener, err error) {
	var b *BusyError
	if !errors.As(err, &b) {
		return
	}
	name := ""
	if l != nil {
		name = l.Name
	}
	kind := b.kind
	if kind == kindShare && l != nil {
		switch {
		case l.queue.isHalted():
			kind = kindHalted
		case l.queue.isPaused():
			kind = kindPaused
		}
	}
	p.refused.count(name, kind)
}
