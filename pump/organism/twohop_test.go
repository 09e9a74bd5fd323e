package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// twoHopOrganism loads and starts the organism of yaml, shut down when the
// test ends.
func twoHopOrganism(t *testing.T, yaml string) *Organism {
	t.Helper()
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Shutdown(context.Background()) })
	return o
}

// awaitLong is collector.await with a deadline generous enough for a
// loaded machine: the first event of a kind in want.
func awaitLong(t *testing.T, c collector, want ...pump.EventKind) pump.Event {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case e := <-c:
			if slices.Contains(want, e.Kind) {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v event", want)
		}
	}
}

// twoHopListeners are hello-world's greeter and shouter without the
// response-handler the shouter sends to: the greeter (a Go handler
// without an error handler) calls the shouter, whose answer has no route.
const twoHopListeners = `  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets, and has shouter shout it
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts to whoever OriginalSender names
`

// TestTwoHopFailureReachesTheCaller: a failure two hops deep — the greeter
// calls the shouter, whose answer has no route — reaches the greeter's
// caller, which the greeter (no error handler) cannot tell: an outside
// caller gets a <huh> saying which call failed where (an Ask an *AskError
// finding failure.ErrNoRoute), not a conversation that ends without an
// answer; an agent whose tool is the greeter reads it as its call's result.
func TestTwoHopFailureReachesTheCaller(t *testing.T) {
	const want = "greeter's call to shouter failed: Answer <ShoutedResponse> from shouter has no route"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	t.Run("an outside caller", func(t *testing.T) {
		o := twoHopOrganism(t, "organism: {name: twohop}\nlisteners:\n"+twoHopListeners)
		c := make(collector, 64)
		env := stage.AppendEnvelope(nil, "tester", "greeter", stage.NewThreadID(),
			[]byte(`<Greeting xmlns=""><Name>Dan</Name></Greeting>`))
		if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
			t.Fatal(err)
		}
		e := awaitLong(t, c, pump.EventHuh, pump.EventReply, pump.EventComplete)
		if diff := cmp.Diff([]string{string(pump.EventHuh), "tester", want},
			[]string{string(e.Kind), e.To, e.Error}); diff != "" {
			t.Errorf("what the caller got: kind, to, error (-want +got):\n%s", diff)
		}

		_, err := o.Pump.Ask(ctx, "tester", "greeter", &hello.Greeting{Name: "Dan"})
		ae, ok := errors.AsType[*pump.AskError](err)
		if !ok || !errors.Is(err, failure.ErrNoRoute) || ae.Event.Error != want || ae.Event.To != "tester" {
			t.Fatalf("Ask: %v, want an *AskError told to the asker saying %q", err, want)
		}
	})

	t.Run("an agent whose tool is the greeter", func(t *testing.T) {
		// Requests in order: the agent's call, the greeter's greeting
		// (it writes it with the organism's model), the agent's answer.
		m := llmtest.NewChatModel(t, func(n int) []string {
			switch n {
			case 0:
				return []string{llmtest.ToolCall("c1", "greeter", `{"Name":"Dan"}`)}
			case 1:
				return []string{"Hello, Dan!"}
			}
			return []string{"the greeting got lost"}
		})
		o := twoHopOrganism(t, fmt.Sprintf(`organism: {name: twohop-agent}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: %s, model: test-model}
listeners:
%s  - name: host
    agent: true
    description: Has Dan greeted
    prompt: You are host.
    peers: [greeter]
`, m.URL, twoHopListeners))
		answer, err := o.AskText(ctx, "host", "greet Dan")
		if err != nil {
			t.Fatal(err)
		}
		if text, _ := PayloadText(answer.Payload); text != "the greeting got lost" {
			t.Errorf("answer %q", text)
		}
		if m.Count() != 3 {
			t.Fatalf("the model was asked %d times, want 3 (call, greeting, answer)", m.Count())
		}
		var results []string
		for _, msg := range m.Request(t, 2) {
			if msg.Role == "tool" {
				results = append(results, msg.Content)
			}
		}
		if len(results) != 1 || !strings.Contains(results[0], want) {
			t.Errorf("the call's result the model read: %q, want the <huh> saying %q", results, want)
		}
	})
}
