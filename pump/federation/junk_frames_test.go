package federation

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestJunkTextFramesLogBounded: a peer sending 1,000 text frames that are
// not JSON (and some JSON frames of no known type) gets a bounded number
// of log lines, and its link goes on: its next call is acknowledged and
// answered.
func TestJunkTextFramesLogBounded(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		junk := []byte("{not json")
		if i%10 == 0 {
			junk = []byte(`{"type":"no-such-frame"}`)
		}
		if err := r.ws.WriteMessage(websocket.TextMessage, junk); err != nil {
			t.Fatal(err)
		}
	}
	ack, early := r.send(r.call("echo", `<Echo xmlns=""><Text>after</Text></Echo>`))
	if ack.Type != frameAck {
		t.Fatalf("good call after the junk: %+v", ack)
	}
	if len(early) == 0 {
		r.next() // its answer
	}
	lines := 0
	for l := range strings.Lines(c.logs.String()) {
		if strings.Contains(l, "refused a frame that is not JSON") || strings.Contains(l, "unexpected frame") ||
			strings.Contains(l, "frames refused since") {
			lines++
		}
	}
	if bound := 1 + int(time.Since(start)/junkLogEvery); lines == 0 || lines > bound {
		t.Fatalf("1,000 junk frames logged %d lines; want 1 to %d", lines, bound)
	}
	if got := c.seen(); strings.Join(got, ",") != "a:after" {
		t.Fatalf("the echo listener saw %q, want the call after the junk", got)
	}
}

// TestJunkFramesCounts: with a frame every second, one line per
// junkLogEvery, each saying how many frames were refused since the line
// before; the end of the link says the rest, so the counts add up.
func TestJunkFramesCounts(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1e9, 0)
	j := &junkFrames{log: slog.New(slog.NewJSONHandler(&buf, nil)), now: func() time.Time { return now }}
	const frames = 1000
	for range frames {
		j.refused("federation: refused a frame that is not JSON", "error", "decode frame")
		now = now.Add(time.Second)
	}
	j.end()
	total, lines := 0, 0
	for l := range strings.Lines(buf.String()) {
		var rec struct{ Frames int }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		total += rec.Frames
		lines++
	}
	if want := frames*int(time.Second)/int(junkLogEvery) + 1; lines > want+1 || lines < want-1 {
		t.Errorf("%d lines for %d frames over %v; want about %d", lines, frames, frames*time.Second, want)
	}
	if total != frames {
		t.Errorf("the lines count %d frames; want %d\n%s", total, frames, buf.String())
	}
}

// TestJunkBinaryFramesLogBounded: 1,000 binary frames that are no envelope
// (nothing to refuse by id) get a bounded number of log lines too, and the
// link goes on.
func TestJunkBinaryFramesLogBounded(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 1000 {
		if err := r.ws.WriteMessage(websocket.BinaryMessage, []byte("\x00\x01 not an envelope")); err != nil {
			t.Fatal(err)
		}
	}
	ack, early := r.send(r.call("echo", `<Echo xmlns=""><Text>after</Text></Echo>`))
	if ack.Type != frameAck {
		t.Fatalf("good call after the junk: %+v", ack)
	}
	if len(early) == 0 {
		r.next() // its answer
	}
	lines := strings.Count(c.logs.String(), "envelope refused")
	if bound := 1 + int(time.Since(start)/junkLogEvery); lines == 0 || lines > bound {
		t.Fatalf("1,000 junk binary frames logged %d lines; want 1 to %d", lines, bound)
	}
	if got := c.seen(); strings.Join(got, ",") != "a:after" {
		t.Fatalf("the echo listener saw %q, want the call after the junk", got)
	}
}
