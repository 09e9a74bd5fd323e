package organism

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// eraHop is what eraRelay takes; eraLanded what it forwards to target.
type (
	eraHop    struct{ Text string }
	eraLanded struct{ Text string }
)

// TestProfileErasSurviveARestart: a durable organism reloaded to widen a
// profile and then restarted with the widened configuration keeps its
// conversations begun before the reload within the definition they began
// with: the restored conversation's message to a listener only the widened
// definition reaches is refused, while a conversation begun after the
// restart reaches it. The history lives in the store's profile_eras table.
func TestProfileErasSurviveARestart(t *testing.T) {
	landed := make(chan string, 8)
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.EraHop", Type: reflect.TypeFor[eraHop]()})
	cat.AddPayload(catalog.Payload{Name: "test.EraLanded", Type: reflect.TypeFor[eraLanded]()})
	cat.AddHandler(catalog.Handler{Name: "test.EraRelay", Takes: reflect.TypeFor[eraHop](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, in *eraHop, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("target", &eraLanded{Text: in.Text}), nil
			})
		}})
	cat.AddHandler(catalog.Handler{Name: "test.EraTarget", Takes: reflect.TypeFor[eraLanded](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, in *eraLanded, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				landed <- in.Text
				return nil, nil
			})
		}})
	doc := func(p string) string {
		return fmt.Sprintf(`organism: {name: eras}
profiles:
  p:
    listeners: [%s]
listeners:
  - {name: relay, payload_class: test.EraHop, handler: test.EraRelay, description: Relays}
  - {name: target, payload_class: test.EraLanded, handler: test.EraTarget, description: Lands}
`, p)
	}
	dir := t.TempDir()
	opts := Options{DataDir: dir, Catalog: cat, Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	o, err := New(parseIn(t, dir, doc("relay")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	old := stage.NewThreadID()
	if _, _, _, err := o.Pump.Threads().JoinAs(old, "client", "relay", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Reload(parseIn(t, dir, doc("relay, target"))); err != nil {
		t.Fatal(err)
	}
	shutdown(t, o)

	o, err = New(parseIn(t, dir, doc("relay, target")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	if got, _ := o.Pump.Threads().Profile(old); got != "p" {
		t.Fatalf("the conversation begun before the restart was not restored (profile %q)", got)
	}
	send := func(thread, text string) {
		t.Helper()
		done := make(chan struct{})
		if _, err := o.Pump.SendEnvelope(ctx, pump.Envelope{From: "client", To: "relay", Thread: thread,
			Payload: []byte(`<eraHop xmlns=""><Text>` + text + `</Text></eraHop>`)}, pump.OutletFunc(func(e pump.Event) {
			if e.Kind == pump.EventComplete {
				close(done)
			}
		})); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("the conversation on %s did not complete", thread)
		}
	}
	send(old, "old")
	select {
	case got := <-landed:
		t.Fatalf("the conversation begun before the widening reached target after the restart (%q)", got)
	default:
	}
	send(stage.NewThreadID(), "new")
	select {
	case got := <-landed:
		if got != "new" {
			t.Fatalf("target got %q, want the new conversation's", got)
		}
	case <-ctx.Done():
		t.Fatal("a conversation begun after the restart did not reach target")
	}
	var n int
	if err := o.Store().ReadDB().QueryRowContext(ctx, `SELECT count(*) FROM profile_eras`).Scan(&n); err != nil || n < 2 {
		t.Errorf("profile_eras holds %d rows (%v), want the era before the reload and the one after", n, err)
	}
}
