package organism

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestRouteCallStoppedDuringTheFill: a route call whose fill model is
// asked when an operator's halt (or a kill) ends the agent's handling
// fails with the stop's cause — which the agent holds the turn on, leaving
// no trace — instead of answering that the request "could not be filled in
// from your words", which the agent would record for the model to read.
func TestRouteCallStoppedDuringTheFill(t *testing.T) {
	for _, cause := range []error{xmlpipe.ErrHalted, xmlpipe.ErrConversationKilled} {
		t.Run(cause.Error(), func(t *testing.T) {
			asked, release := make(chan struct{}), make(chan struct{})
			once := sync.OnceFunc(func() { close(asked) })
			chat := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				once()
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer chat.Close()
			defer close(release)
			o := loadOrganism(t, helloWithTools+`llm:
  retries: 0
  backends: [{provider: openai, base_url: "`+chat.URL+`"}]
routing:
  fill_models: [cheap]
`)
			ctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			type result struct {
				res llm.LocalResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := o.routeCall(ctx, llm.LocalCall{Agent: "greeter", Thread: "t", ID: "c1",
					Arguments: []byte(`{"need":"multiply six by seven"}`)})
				done <- result{res, err}
			}()
			select {
			case <-asked:
			case <-time.After(30 * time.Second):
				t.Fatal("the fill model was never asked")
			}
			stop(cause)
			select {
			case r := <-done:
				if !errors.Is(r.err, cause) {
					t.Errorf("route call stopped during the fill: %+v, %v; want an error wrapping %v", r.res, r.err, cause)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the route call did not end")
			}
		})
	}
}
