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
			acks := countAnswerAcks(c)

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
			acks.wantOne(t, c, a2.m)
		})
	}
}

// answerAcks counts the acknowledgements a callee gets of its reply.
type answerAcks struct {
	mu       sync.Mutex
	answerID string
	frames   map[string]int
	// acked is closed when the first acknowledgement of the reply came.
	acked chan struct{}
}

// countAnswerAcks counts the acknowledgements c gets of its reply; it
// installs c's hooks, so it comes before any traffic.
func countAnswerAcks(c *callee) *answerAcks {
	a := &answerAcks{frames: map[string]int{}, acked: make(chan struct{})}
	c.m.onAcked = func(env []byte) {
		if e, err := parse(env); err == nil && e.Link.Kind == KindReply {
			a.mu.Lock()
			a.answerID = e.Link.ID
			a.mu.Unlock()
			close(a.acked)
		}
	}
	c.m.frameHook = func(f frame) {
		if f.Type == frameAck {
			a.mu.Lock()
			a.frames[f.ID]++
			a.mu.Unlock()
		}
	}
	return a
}

// waitAcked waits until c got the reply acknowledged.
func (a *answerAcks) waitAcked(t *testing.T) {
	t.Helper()
	select {
	case <-a.acked:
	case <-time.After(30 * time.Second):
		t.Fatal("the callee never got the answer acknowledged")
	}
}

// wantOne checks that c got exactly one acknowledgement of its reply and
// saw one call, once caller m closed: every frame m sends reaches c
// before their link ends.
func (a *answerAcks) wantOne(t *testing.T, c *callee, m *Manager) {
	t.Helper()
	a.waitAcked(t)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the callee's link never ended", func() bool { return linkOf(c.m.gateways[0]) == nil })
	a.mu.Lock()
	got := a.frames[a.answerID]
	a.mu.Unlock()
	if diff := cmp.Diff(1, got); diff != "" {
		t.Errorf("acknowledgements of the answer (-want +got):\n%s", diff)
	}
	if n := len(c.seen()); n != 1 {
		t.Errorf("the callee saw %d calls, want 1", n)
	}
}

// TestAnswerKeptWhileAdoptingByDigest: a caller without a journal stops
// while its call, recognised by its digest, waits on the callee; after the
// restart the message handled again reads the recorded calls (no answer
// yet) and, before it claims one, the callee's answer comes, finds no call
// waiting, is kept in the record and acknowledged. The handling must take
// the kept answer at once, not wait for its call_timeout.
func TestAnswerKeptWhileAdoptingByDigest(t *testing.T) {
	aKey, dir := newKey(t), t.TempDir()
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	t.Cleanup(func() { close(hold) })
	acks := countAnswerAcks(c)

	md := xmlpipe.Metadata{ThreadID: stage.NewThreadID(), From: "console"}
	a1 := newCaller(t, aKey, c, dir)
	first := make(chan error, 1)
	go func() {
		_, err := a1.echo.Handle(context.Background(), a1.once, md)
		first <- err
	}()
	waitUntil(t, "the call never reached the callee", func() bool { return len(c.seen()) == 1 })
	a1.stop(t) // the call left once its record was durable
	if err := <-first; err == nil {
		t.Fatal("the first handling returned no error when its manager stopped")
	}

	adopting, release := make(chan string, 1), make(chan struct{})
	var once, releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	a2 := newCallerBefore(t, aKey, c, dir, func(*config.Gateway) {}, func(m *Manager) {
		m.proxyHook = func(step proxyStep, ref string) {
			if step == proxyAdopting {
				once.Do(func() {
					adopting <- ref
					<-release
				})
			}
		}
	})
	defer a2.m.Close()
	type result struct {
		r   xmlpipe.Response
		err error
	}
	answered := make(chan result, 1)
	go func() {
		r, err := a2.echo.Handle(context.Background(), a2.once, md)
		answered <- result{r, err}
	}()
	select {
	case <-adopting:
	case <-time.After(30 * time.Second):
		t.Fatal("the handling after the restart never came to adopt its call")
	}
	hold <- struct{}{} // the callee answers: kept and acknowledged
	acks.waitAcked(t)
	releaseOnce.Do(func() { close(release) })
	select {
	case got := <-answered:
		wantOnce(t, got.r, got.err)
	case <-time.After(30 * time.Second): // call_timeout is 5 minutes
		t.Fatal("the handling after the restart got no answer: it waits for its call_timeout")
	}
	acks.wantOne(t, c, a2.m)
}
