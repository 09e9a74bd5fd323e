package federation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestCallOverTheFrameCapRefused: a call whose signed envelope is larger
// than a link frame may be (the peer closes a link that carries one) fails
// at once with ErrTooLarge, and never enters the outbox — where it would
// cut the link on every reconnect and hold up everything behind it. The
// link goes on carrying the next call.
func TestCallOverTheFrameCapRefused(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	l, _ := a.pump.Lookup("echo")
	big, err := l.Payload.Decode([]byte(`<Echo><Text>` + strings.Repeat("x", maxFrame) + `</Text></Echo>`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := a.echo.Handle(ctx, big, callMetadata()); !errors.Is(err, ErrTooLarge) {
		t.Errorf("the call over the frame cap ended with %v, want ErrTooLarge", err)
	}
	if q := a.m.gateways[0].queued(); q != 0 {
		t.Errorf("%d envelope(s) wait for the peer after the refused call, want 0", q)
	}
	r, err := a.echo.Handle(ctx, a.once, callMetadata())
	wantOnce(t, r, err)
}

// TestAnswerOverTheFrameCapBecomesAHuh: an answer too large for a link
// frame reaches the peer as a huh saying so — its caller fails at once —
// rather than cutting the link on every reconnect.
func TestAnswerOverTheFrameCapBecomesAHuh(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	g := c.m.gateways[0]
	lt := stage.NewThreadID()
	big := &envelope{Thread: lt, Link: link{Kind: KindReply, Ref: lt}, PayloadName: "Echoed",
		Payload: []byte(`<Echoed xmlns=""><Text>` + strings.Repeat("X", maxFrame) + `</Text></Echoed>`)}
	if err := g.sendAnswer(big, "conversation-"+lt); err != nil {
		t.Fatal(err)
	}
	got := mustParse(t, r.next())
	if got.Link.Kind != KindHuh || got.Link.Ref != lt || !strings.Contains(got.Link.Error, "larger than a federation link carries") {
		t.Fatalf("the peer got a %s for %s (%q), want a huh for %s saying the answer is too large",
			got.Link.Kind, got.Link.Ref, got.Link.Error, lt)
	}
}
