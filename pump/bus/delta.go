package bus

import (
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// maxDeltaFrame bounds the text of one delta frame: a longer run of pieces
// goes out in several frames.
const maxDeltaFrame = 16 << 10

// pendingDelta is a delta frame (an agent's streamed text) waiting in a
// socket's send queue. The pieces of the same stream that arrive while it
// waits, with nothing queued after it, join it instead of taking a frame
// each: a client gets as many frames as its writer has turns, however many
// tokens the model sends, and a slow client falls behind by text, not by
// frames. The writer takes it (take) when it encodes the frame.
type pendingDelta struct {
	conv, thread, agent string

	mu    sync.Mutex
	text  strings.Builder
	end   bool
	taken bool
}

func newPendingDelta(o organism.Output) *pendingDelta {
	d := &pendingDelta{conv: o.Conversation, thread: o.Thread, agent: o.From, end: o.End}
	d.text.WriteString(o.Text)
	return d
}

// add joins o to the frame and reports whether it did: not once the writer
// took it, after its stream's end, for another stream, or beyond
// maxDeltaFrame.
func (d *pendingDelta) add(o organism.Output) bool {
	if o.Conversation != d.conv || o.From != d.agent {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.taken || d.end || d.text.Len()+len(o.Text) > maxDeltaFrame {
		return false
	}
	d.text.WriteString(o.Text)
	d.end = o.End
	return true
}

// take returns the frame's text and end mark; nothing joins it afterwards.
func (d *pendingDelta) take() (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.taken = true
	return d.text.String(), d.end
}

// sendDelta queues a piece of streamed text: joined to the delta frame
// queued last when nothing was queued after it, else as a new frame. It
// never blocks (see send).
func (c *conn) sendDelta(o organism.Output) {
	c.qmu.Lock()
	if d, ok := c.last.(*pendingDelta); ok && d.add(o) {
		c.qmu.Unlock()
		return
	}
	c.qmu.Unlock()
	c.queueDelta(newPendingDelta(o))
}

// queueDelta queues a delta frame (send).
func (c *conn) queueDelta(d *pendingDelta) bool { return c.send(d) }
