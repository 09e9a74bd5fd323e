package federation

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
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

// TestRefusedEnvelopesLogBounded: a peer sending 1,000 envelopes this side
// refuses by id — stale ones, calls for a root tag it does not export, in
// another organism's name — gets each refused (a nack apiece) but a
// bounded number of log lines, and its link goes on.
func TestRefusedEnvelopesLogBounded(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		var env []byte
		switch i % 3 {
		case 0:
			env = r.callSent("echo", `<Echo xmlns=""><Text>old</Text></Echo>`, time.Now().Add(-time.Hour))
		case 1:
			env = r.call("nothing", `<Nothing xmlns=""/>`)
		default:
			lt := stage.NewThreadID()
			e := &envelope{From: "mallory", To: "echo", Thread: lt, Link: link{ID: lt, Kind: KindCall, Sent: time.Now()},
				Payload: []byte(`<Echo xmlns=""><Text>forged</Text></Echo>`)}
			env, err = envsig.Sign(aKey, e.build())
			if err != nil {
				t.Fatal(err)
			}
		}
		if nack, _ := r.send(env); nack.Type != frameNack {
			t.Fatalf("envelope %d answered %+v, want a nack", i, nack)
		}
	}
	ack, early := r.send(r.call("echo", `<Echo xmlns=""><Text>after</Text></Echo>`))
	if ack.Type != frameAck {
		t.Fatalf("good call after the refused ones: %+v", ack)
	}
	if len(early) == 0 {
		r.next() // its answer
	}
	lines := 0
	for l := range strings.Lines(c.logs.String()) {
		if strings.Contains(l, "refused") && !strings.Contains(l, "level=INFO") {
			lines++
		}
	}
	// One line per kind of refusal per junkLogEvery at most.
	if bound := 3 * (1 + int(time.Since(start)/junkLogEvery)); lines < 3 || lines > bound {
		t.Fatalf("1,000 refused envelopes logged %d lines; want 3 to %d:\n%s", lines, bound, c.logs.String())
	}
	if got := c.seen(); strings.Join(got, ",") != "a:after" {
		t.Fatalf("the echo listener saw %q, want the call after the refused ones", got)
	}
}

// TestRefusalsCountPerReason: refusals of different reasons are logged
// apart, each at most once per junkLogEvery with the count since its line
// before; the end of the link says the rest, so each reason's counts add
// up.
func TestRefusalsCountPerReason(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1e9, 0)
	r := &refusals{log: slog.New(slog.NewJSONHandler(&buf, nil)), now: func() time.Time { return now }}
	const each = 300
	for range each {
		r.refused(RefusedStale, "federation: security: stale envelope refused", "id", "x")
		r.refused(RefusedNotExported, "federation: security: call for a root tag not exported refused", "id", "y")
		now = now.Add(time.Second)
	}
	r.end()
	totals := map[string]int{}
	lines := 0
	for l := range strings.Lines(buf.String()) {
		var rec struct {
			Msg, Reason string
			Frames      int
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Reason != "": // the end of the link
			totals[rec.Reason] += rec.Frames
		case strings.Contains(rec.Msg, "stale"):
			totals[RefusedStale] += rec.Frames
		case strings.Contains(rec.Msg, "not exported"):
			totals[RefusedNotExported] += rec.Frames
		default:
			t.Errorf("line %q names neither refusal", l)
		}
		lines++
	}
	if want := 2 * (each*int(time.Second)/int(junkLogEvery) + 1); lines > want+2 || lines < want-2 {
		t.Errorf("%d lines for 2×%d refusals over %v; want about %d", lines, each, each*time.Second, want)
	}
	if d := cmp.Diff(map[string]int{RefusedStale: each, RefusedNotExported: each}, totals); d != "" {
		t.Errorf("refusals counted (-want +got):\n%s\n%s", d, buf.String())
	}
}
