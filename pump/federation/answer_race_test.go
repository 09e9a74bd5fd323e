package federation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestAnswerMeetsRedeliveredHandling: a journaled caller stops while its
// call, named by its message, waits on the callee; after the restart the
// callee's answer reaches the caller just as the re-delivered message
// takes its call back. onAnswer, finding no call waiting, is held before
// it keeps the answer, or once it kept it, while the re-delivered handling
// registers and reads the call's record — without the answer, or with it.
// Either way the handling is answered once, promptly (not at its
// call_timeout), and the callee gets one acknowledgement of the answer.
func TestAnswerMeetsRedeliveredHandling(t *testing.T) {
	for _, tc := range []struct {
		name string
		step proxyStep // where onAnswer is held while the handling opens
	}{
		{"the handling reads the record before the answer is kept", answerUnclaimed},
		{"the handling reads the record after the answer is kept", answerKept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aKey, dir := newKey(t), t.TempDir()
			hold := make(chan struct{})
			c := newCalleeHolding(t, aKey, hold)
			t.Cleanup(func() { close(hold) })
			var mu sync.Mutex
			var answerID string
			acks := map[string]int{}
			acked := make(chan struct{})
			c.m.onAcked = func(env []byte) {
				if e, err := parse(env); err == nil && e.Link.Kind == KindReply {
					mu.Lock()
					answerID = e.Link.ID
					mu.Unlock()
					close(acked)
				}
			}
			c.m.frameHook = func(f frame) {
				if f.Type == frameAck {
					mu.Lock()
					acks[f.ID]++
					mu.Unlock()
				}
			}

			// The first life: the call reaches the callee, its record
			// commits, and the caller stops while it waits.
			md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
			a1 := newCaller(t, aKey, c, dir)
			nameCallsByMessage(a1)
			h := handlingOf{seq: journalMessage(t, a1.st, md.ThreadID)}
			lt := callID(a1.m.secret, a1.m.db.epoch, "b", "echo", h.seq, 0)
			first := make(chan error, 1)
			go func() {
				_, err := a1.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a1.once, md)
				first <- err
			}()
			waitUntil(t, "the call never reached the callee", func() bool { return len(c.seen()) == 1 })
			waitUntil(t, "the call's record never committed", func() bool {
				found, _, err := a1.m.db.callByID("b", lt)
				return err == nil && found
			})
			a1.stop(t)
			if err := <-first; err == nil {
				t.Fatal("the first handling returned no error when its manager stopped")
			}
			h.recovered = true

			// The restart, with onAnswer held at the step the first time
			// it reaches it.
			at, opened, release := make(chan string, 1), make(chan string, 1), make(chan struct{})
			var once, releaseOnce sync.Once
			t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
			a2 := newCallerBefore(t, aKey, c, dir, func(*config.Gateway) {}, func(m *Manager) {
				m.proxyHook = func(step proxyStep, ref string) {
					switch step {
					case tc.step:
						once.Do(func() {
							at <- ref
							<-release
						})
					case proxyOpened:
						opened <- ref
					}
				}
			})
			defer a2.m.Close()
			nameCallsByMessage(a2)
			hold <- struct{}{} // the callee answers
			select {
			case ref := <-at:
				if ref != lt {
					t.Fatalf("onAnswer held for call %s, want %s", ref, lt)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the answer never reached the restarted caller")
			}

			// The re-delivered message takes its call back (registers and
			// reads its record) while onAnswer is held.
			type result struct {
				r   xmlpipe.Response
				err error
			}
			answered := make(chan result, 1)
			go func() {
				r, err := a2.echo.Handle(context.WithValue(context.Background(), handlingKey{}, h), a2.once, md)
				answered <- result{r, err}
			}()
			select {
			case ref := <-opened:
				if ref != lt {
					t.Fatalf("the re-delivered handling opened call %s, want %s", ref, lt)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the re-delivered handling never opened its call")
			}
			releaseOnce.Do(func() { close(release) })
			select {
			case got := <-answered:
				wantOnce(t, got.r, got.err)
			case <-time.After(30 * time.Second): // call_timeout is 5 minutes
				t.Fatal("the re-delivered handling got no answer: it waits for its call_timeout")
			}
			select {
			case <-acked:
			case <-time.After(30 * time.Second):
				t.Fatal("the callee never got the answer acknowledged")
			}
			// Every frame the caller sends reaches the callee before its
			// link ends.
			if err := a2.m.Close(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the callee's link never ended", func() bool { return linkOf(c.m.gateways[0]) == nil })
			mu.Lock()
			got := acks[answerID]
			mu.Unlock()
			if diff := cmp.Diff(1, got); diff != "" {
				t.Errorf("acknowledgements of the answer (-want +got):\n%s", diff)
			}
			if n := len(c.seen()); n != 1 {
				t.Errorf("the callee saw %d calls, want 1", n)
			}
		})
	}
}
