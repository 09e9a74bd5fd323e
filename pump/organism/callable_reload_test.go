package organism

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestCallableKeepsTheCallersTable: a conversation keeps the profile
// table it began with (seed 000 §8.5), and so do its calls. boss, under
// profile calc, calls worker.call; a reload adds slow to calc while boss's
// conversation runs. The call, made after the reload, would run its
// callee under calc as now defined and reach slow, which boss's
// conversation may not reach: it is refused as a failed call that names
// nothing outside calc, and slow never runs.
func TestCallableKeepsTheCallersTable(t *testing.T) {
	var slowRan atomic.Int64
	reloaded, bossWaiting := make(chan struct{}), make(chan struct{}, 1)
	m := newWireModel(t, config.OpenAI, func(_ int, body map[string]any) modelTurn {
		results := toolMessages(body)
		if strings.HasPrefix(fmt.Sprint(messages(body)[1]["content"]), "You are boss.") {
			if r, ok := results["c1"]; ok {
				return say("boss got: " + r)
			}
			bossWaiting <- struct{}{}
			<-reloaded
			return call(scriptedCall{"c1", "worker_call", `{"Job":"x"}`})
		}
		if r, ok := results["s1"]; ok {
			return say("worker got: " + r)
		}
		return call(scriptedCall{"s1", "slow", `{"Text":"x"}`})
	})
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Slow", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(context.Context, *slowQuery, xmlpipe.Metadata) (xmlpipe.Response, error) {
				slowRan.Add(1)
				return xmlpipe.Respond(&slowAnswer{Text: "secret"}), nil
			})
		}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	doc := func(calc string) string {
		return fmt.Sprintf(`organism: {name: callee}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
profiles:
  calc:
    listeners: [%s]
listeners:
  - {name: slow, payload_class: test.SlowQuery, handler: test.Slow, description: Answers}
  - {name: boss, agent: true, description: Delegates, prompt: You are boss., peers: [worker.call], profile: calc}
  - name: worker
    agent: true
    description: Works
    prompt: You are worker.
    peers: [slow]
    callable:
      description: Does the work
      parameters: [{name: Job, required: true}]
      requires: [slow]
`, m.URL, calc)
	}
	dir := t.TempDir()
	o, err := New(parseIn(t, dir, doc("boss, worker.call, worker")), Options{Catalog: cat, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	l, _ := o.Pump.Lookup("boss")
	task := reflect.New(l.Payload.GoType())
	task.Elem().FieldByName("Text").SetString("go")
	done := make(chan string, 4)
	if _, err := o.Pump.Send(context.Background(), "console", "boss", task.Interface(), pump.OutletFunc(func(e pump.Event) {
		if a, ok := e.Payload.(*llm.Answer); ok && e.Kind == pump.EventReply {
			done <- a.Text
		}
	})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-bossWaiting:
	case <-time.After(30 * time.Second):
		t.Fatal("boss's model was never asked")
	}
	if _, err := o.Reload(parseIn(t, dir, doc("boss, worker.call, worker, slow"))); err != nil {
		t.Fatal(err)
	}
	close(reloaded)
	var got string
	select {
	case got = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("boss did not answer")
	}
	if n := slowRan.Load(); n != 0 {
		t.Errorf("slow ran %d times for a conversation whose profile does not reach it", n)
	}
	if !strings.Contains(got, "call again from a new conversation") || strings.Contains(got, "slow") {
		t.Errorf("boss got %q, want the refused call, naming nothing outside calc", got)
	}
}
