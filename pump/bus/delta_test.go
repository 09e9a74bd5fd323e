package bus

import (
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestDeltasCoalesce: pieces of one stream join the delta frame waiting in
// the queue while nothing was queued after it; a frame the writer took, an
// ended stream, another stream, another item queued in between or 16 KiB
// of text start a new frame.
func TestDeltasCoalesce(t *testing.T) {
	c := &conn{out: make(chan any, 64), closing: make(chan struct{})}
	piece := func(agent, text string, end bool) organism.Output {
		return organism.Output{Kind: organism.OutputDelta, Conversation: "conv", From: agent, Text: text, End: end}
	}
	c.sendDelta(piece("poet", "Rain ", false))
	c.sendDelta(piece("poet", "on tin", false))
	c.sendDelta(piece("critic", "Hmm", false)) // another stream
	c.sendDelta(piece("critic", ".", true))    // joins critic's, ends it
	c.sendDelta(piece("critic", "More", false))
	c.send("event") // queued in between
	c.sendDelta(piece("critic", " text", false))
	c.sendDelta(piece("critic", strings.Repeat("x", maxDeltaFrame), false))
	var frames []string
	for len(c.out) > 0 {
		switch it := (<-c.out).(type) {
		case *pendingDelta:
			text, end := it.take()
			if end {
				text += "<end>"
			}
			frames = append(frames, it.agent+":"+text)
		default:
			frames = append(frames, "event")
		}
	}
	want := []string{"poet:Rain on tin", "critic:Hmm.<end>", "critic:More", "event", "critic: text",
		"critic:" + strings.Repeat("x", maxDeltaFrame)}
	if strings.Join(frames, "|") != strings.Join(want, "|") {
		t.Errorf("frames %q\nwant   %q", frames, want)
	}
	// A frame the writer took gets nothing more.
	d := newPendingDelta(piece("poet", "a", false))
	d.take()
	if d.add(piece("poet", "b", false)) {
		t.Error("text joined a frame already written")
	}
}
