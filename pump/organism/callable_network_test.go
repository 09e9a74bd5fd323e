package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestCallableKeepsTheCallersNetwork: a call made from a conversation
// begun under profile calc (network: none) after a reload let calc dial
// example.com:443 is refused: its callee's conversation, begun now, would
// dial what the calling conversation's table forbids (seed 000 §8.5). A
// caller under calc as now defined calls, and its callee may dial; a
// reload that narrows the network refuses nothing.
func TestCallableKeepsTheCallersNetwork(t *testing.T) {
	var dialled atomic.Int64
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Dial", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, q *slowQuery, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if err := xmlpipe.CheckDial(ctx, q.Text); err != nil {
					return xmlpipe.Respond(&slowAnswer{Text: "refused: " + err.Error()}), nil
				}
				dialled.Add(1)
				return xmlpipe.Respond(&slowAnswer{Text: "dialled " + q.Text}), nil
			})
		}})
	doc := func(network string) string {
		return fmt.Sprintf(`organism: {name: callee}
profiles:
  calc:
    listeners: [dialer, dialer.call]
    network: %s
listeners:
  - name: dialer
    payload_class: test.SlowQuery
    handler: test.Dial
    description: Dials
    callable:
      description: Dials an address
      parameters: [{name: Text, required: true}]
`, network)
	}
	dir := t.TempDir()
	o, err := New(parseIn(t, dir, doc("[]")), Options{Catalog: cat, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	call := func(pinned xmlpipe.Profile) (string, error) {
		t.Helper()
		l, ok := o.Pump.Lookup("dialer.call")
		if !ok {
			t.Fatal("no dialer.call")
		}
		payload, err := l.Payload.Decode([]byte(`<DialerCall><Text>example.com:443</Text></DialerCall>`))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		resp, err := l.Handler.Handle(ctx, payload, xmlpipe.Metadata{ThreadID: "caller", From: "boss", Profile: pinned})
		if r, ok := resp.(*xmlpipe.RespondResponse); ok {
			return fmt.Sprintf("%+v", r.Payload), err
		}
		return fmt.Sprintf("%+v", resp), err
	}

	pinned := o.Pump.Profile("calc") // the calling conversation's, as it began
	if got, err := call(pinned); err != nil || !strings.Contains(got, "refused") {
		t.Fatalf("before the reload: %s, %v; want the callee's dial refused", got, err)
	}
	if _, err := o.Reload(parseIn(t, dir, doc(`["example.com:443"]`))); err != nil {
		t.Fatal(err)
	}
	got, err := call(pinned)
	if !errors.Is(err, ErrCallBeyondProfile) || strings.Contains(err.Error(), "example.com") {
		t.Fatalf("a call from the conversation begun before the reload: %s, %v; want %v naming no address",
			got, err, ErrCallBeyondProfile)
	}
	if n := dialled.Load(); n != 0 {
		t.Fatalf("the callee dialled %d times for a conversation whose profile dials nothing", n)
	}
	widened := o.Pump.Profile("calc")
	if got, err := call(widened); err != nil || !strings.Contains(got, "dialled example.com:443") {
		t.Fatalf("a call from a conversation begun after the reload: %s, %v", got, err)
	}
	if _, err := o.Reload(parseIn(t, dir, doc("[]"))); err != nil {
		t.Fatal(err)
	}
	if got, err := call(widened); err != nil || !strings.Contains(got, "refused") {
		t.Fatalf("after a reload narrowing the network: %s, %v; want the call run, its dial refused", got, err)
	}
}
