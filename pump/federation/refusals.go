package federation

import (
	"log/slog"
	"sync"
	"time"
)

// refusals logs the envelopes one link refuses by their link id (each one
// answered with a nack: stale, in another organism's name, for a root tag
// not exported, …) as junkFrames logs the frames it refuses with nothing
// to answer: per reason (an Observer refusal reason, or refusedFuture), at most one line per
// junkLogEvery, each saying how many envelopes were refused for that
// reason since the line before (this one included). A peer sending such
// envelope after envelope costs a line a minute per reason, not one an
// envelope; every one is still nacked and counted in the metrics. Safe
// for the link's delivery and its handlers at once.
type refusals struct {
	log *slog.Logger
	now func() time.Time

	mu sync.Mutex
	// by holds each reason's lines (nil until the first refusal).
	by map[string]*junkFrames
	// ended is set by end: a refusal after it (a handler the link's end
	// did not wait for) is logged at once.
	ended bool
}

// refusedFuture is the refusals key of an envelope sent in the future (the
// peer's clock runs ahead): counted as stale, but logged apart from the
// envelopes sent too long ago, since its line says what to fix.
const refusedFuture = RefusedStale + "-future"

// refused counts one envelope refused for reason and logs msg with args
// and the count when reason's last line is junkLogEvery old (or there is
// none).
func (r *refusals) refused(reason, msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		r.log.Warn(msg, args...)
		return
	}
	j := r.by[reason]
	if j == nil {
		if r.by == nil {
			r.by = map[string]*junkFrames{}
		}
		j = &junkFrames{log: r.log, now: r.now}
		r.by[reason] = j
	}
	j.refused(msg, args...)
}

// end logs, per reason, the envelopes refused since its last line, if any,
// once the link ends.
func (r *refusals) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	for reason, j := range r.by {
		if j.pending > 0 {
			r.log.Warn("federation: envelopes refused since the last line, when the link ended",
				"reason", reason, "frames", j.pending)
			j.pending = 0
		}
	}
}

// refusedEnvelope logs an envelope refused by its link id through the
// link's refusals (a link not run: every one).
func (c *conn) refusedEnvelope(reason, msg string, args ...any) {
	if c.refusals == nil {
		c.g.log.Warn(msg, args...)
		return
	}
	c.refusals.refused(reason, msg, args...)
}
