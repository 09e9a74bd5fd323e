package federation

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestGracefulStopWritesOwedAcknowledgements: calls the receiver took are
// acknowledged once journaled — a while after they came, with a batch
// delay. A graceful stop meanwhile waits for those acknowledgements before
// it closes the link, so after the restart the peer has nothing to resend:
// no copy is refused as a duplicate, and every call is served and answered
// once. A stop whose context ended (ShutdownNow) closes the link at once:
// the peer resends the calls, acknowledged again as copies, and each is
// still served and answered once.
func TestGracefulStopWritesOwedAcknowledgements(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		stop    func(*Manager)
		drained bool
	}{
		{"graceful", (*Manager).Stop, true},
		{"now", func(m *Manager) { m.StopContext(ended) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testStopAcknowledgements(t, tc.stop, tc.drained) })
	}
}

func testStopAcknowledgements(t *testing.T, stop func(*Manager), drained bool) {
	aKey, bKey, dir := newKey(t), newKey(t), t.TempDir()
	hold := make(chan struct{})
	held := true
	defer func() {
		if held {
			close(hold)
		}
	}()
	c := newCalleeWith(t, aKey, bKey, dir, hold, &store.Options{BatchDelay: time.Second})
	texts := []string{"one", "two", "three"}
	c.mu.Lock()
	c.entered = make(chan string, len(texts))
	c.mu.Unlock()
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := map[string][]byte{} // by link id
	for _, text := range texts {
		b := r.call("echo", `<Echo xmlns=""><Text>`+text+`</Text></Echo>`)
		calls[mustParse(t, b).Link.ID] = b
		if err := r.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	for range texts { // injected: their journal records wait for the batch delay
		<-c.entered
	}

	stop(c.m)
	acked := map[string]bool{}
	bye := false
	_ = r.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		mt, b, err := r.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("the link did not close after the stop: %v", err)
			}
			break
		}
		if mt != websocket.TextMessage {
			continue
		}
		var f frame
		if err := jsonUnmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Type == frameGoodbye { // the last word: every ack owed came before it
			bye = true
			continue
		}
		if f.Type != frameAck || f.Duplicate || bye {
			t.Fatalf("call answered with %+v at the stop (after the goodbye: %v)", f, bye)
		}
		acked[f.ID] = true
	}
	held = false
	close(hold)
	stopCallee(t, c)

	c2 := newCalleeWith(t, aKey, bKey, dir, nil, &store.Options{})
	r2, err := dialRaw(t, c2, aKey)
	if err != nil {
		t.Fatal(err)
	}
	var resent []string
	replies := map[string]int{} // by the call's link id
	for id, b := range calls {
		if acked[id] {
			continue
		}
		resent = append(resent, id)
		ack, answers := r2.send(b)
		if ack.Type != frameAck || ack.Duplicate == drained {
			t.Errorf("call %s resent after the restart: %+v", id, ack)
		}
		for _, a := range answers {
			replies[mustParse(t, a).Link.Ref]++
		}
	}
	if drained && len(resent) > 0 {
		t.Errorf("the graceful stop left %d of %d calls unacknowledged: the peer resent them", len(resent), len(calls))
	}
	if !drained && len(resent) != len(calls) {
		t.Errorf("the stop without drain acknowledged %d of %d calls journaled after it", len(calls)-len(resent), len(calls))
	}
	for len(replies) < len(calls) {
		e := mustParse(t, r2.next())
		if e.Link.Kind != KindReply {
			t.Fatalf("got a %s, want replies", e.Link.Kind)
		}
		replies[e.Link.Ref]++
	}
	want := map[string]int{}
	for id := range calls {
		want[id] = 1
	}
	if d := cmp.Diff(want, replies); d != "" {
		t.Errorf("replies by call (-want +got):\n%s", d)
	}
	got := append(c.seen(), c2.seen()...)
	slices.Sort(got)
	if d := cmp.Diff([]string{"a:one", "a:three", "a:two"}, got); d != "" {
		t.Errorf("the echo served (-want +got):\n%s", d)
	}
}
