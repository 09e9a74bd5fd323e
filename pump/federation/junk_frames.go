package federation

import (
	"log/slog"
	"time"
)

// junkLogEvery is how often, at most, one link logs the text frames it
// refuses, and the binary ones.
const junkLogEvery = time.Minute

// junkFrames logs the frames one link refuses with nothing to answer
// (text frames not JSON or of a type it does not know; binary frames that
// are no envelope) at most once per junkLogEvery, each line saying how
// many frames were refused since the line before (this one included): a
// peer sending junk frame after frame costs one line a minute, not one a
// frame. One goroutine uses each: the link's reader (text frames) or its
// delivery (binary frames, conn.junkEnvelopes).
type junkFrames struct {
	log *slog.Logger
	now func() time.Time
	// last is when the last line was written (zero: none yet).
	last time.Time
	// pending counts the frames refused since the last line.
	pending int
}

// refused counts one refused frame, and logs msg with args and the count
// when the last line is junkLogEvery old (or there is none).
func (j *junkFrames) refused(msg string, args ...any) {
	j.pending++
	now := j.now()
	if !j.last.IsZero() && now.Sub(j.last) < junkLogEvery {
		return
	}
	j.log.Warn(msg, append(args, "frames", j.pending, "per", junkLogEvery)...)
	j.last, j.pending = now, 0
}

// end logs the frames refused since the last line, if any, once the link
// ends.
func (j *junkFrames) end() {
	if j.pending == 0 {
		return
	}
	j.log.Warn("federation: frames refused since the last line, when the link ended", "frames", j.pending)
	j.pending = 0
}

// refusedJunk logs a binary frame refused with nothing to answer through
// the link's junkEnvelopes (a link not run: every one).
func (c *conn) refusedJunk(msg string, args ...any) {
	if c.junkEnvelopes == nil {
		c.g.log.Warn(msg, args...)
		return
	}
	c.junkEnvelopes.refused(msg, args...)
}
