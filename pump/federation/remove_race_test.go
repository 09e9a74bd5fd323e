package federation

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallOpenedAsItsGatewayIsRemoved: a call opened in the instant its
// gateway is removed is either refused with ErrGatewayRemoved before it
// is queued, or sent and cancelled while the link still runs — never left
// in the outbox of the gone gateway, to be sent to whichever gateway of
// that name comes next. The first case opens the call once the removal
// ended the gateway's calls, the moment the link still runs but nobody
// waits for its acknowledgements any more; the others race the call with
// the removal.
func TestCallOpenedAsItsGatewayIsRemoved(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	const races = 20
	for i := range races + 1 {
		a := newCaller(t, aKey, c, t.TempDir())
		g := a.m.gateways[0]
		waitUntil(t, "the caller never connected", func() bool { return linkOf(g) != nil })
		errc := make(chan error, 1)
		opened := make(chan struct{}, 1)
		call := func() {
			go func() {
				_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
				errc <- err
			}()
		}
		if i == 0 {
			// The call is opened before the removal begins and goes on
			// only once the removal ended the gateway's calls — or, the
			// removal waiting for it, once the removal began.
			ended := make(chan struct{})
			a.m.proxyHook = func(at proxyStep, _ string) {
				if at != proxyOpened {
					return
				}
				opened <- struct{}{}
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					select {
					case <-ended:
						return
					case <-g.removing:
						g.mu.Lock()
						waited := g.waiting > 0
						g.mu.Unlock()
						if waited {
							return
						}
					default:
					}
				}
			}
			a.m.removeHook = func(*gateway) {
				close(ended)
				select { // the handler cancels while the link runs (or never)
				case err := <-errc:
					errc <- err
				case <-time.After(30 * time.Second):
				}
			}
			call()
			<-opened
		} else {
			call()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := a.m.RemoveGateway(ctx, "b"); err != nil {
			t.Errorf("round %d: RemoveGateway: %v", i, err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, ErrGatewayRemoved) {
				t.Errorf("round %d: the call ended with %v, want ErrGatewayRemoved", i, err)
			}
		case <-ctx.Done():
			t.Fatalf("round %d: the call still waits after its gateway was removed", i)
		}
		cancel()
		if q := g.queued(); q != 0 {
			t.Errorf("round %d: %d envelope(s) left in the removed gateway's outbox, want 0", i, q)
		}
		a.stop(t)
	}
}
