package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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

// TestUnroutedAnswerReachesTheCaller: a listener that cannot hear of a
// refusal (no error handler) whose answer no listener takes — a WASM guest
// without a response contract writing <Done>, a Go handler sending to a
// name nobody has — leaves its caller with a <huh> naming the answer's tag
// and the listener (an Ask with an *AskError finding failure.ErrNoRoute),
// not a conversation that ends without an answer; an agent that called
// such a listener reads that <huh> as its call's result and answers.
func TestUnroutedAnswerReachesTheCaller(t *testing.T) {
	ops := guestPath(t, "ops")
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n == 0 {
			return []string{llmtest.ToolCall("c1", "calc", `{"Do":"ping"}`)}
		}
		return []string{"calc could not answer"}
	})
	yaml := fmt.Sprintf(`organism: {name: noroute}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: %s, model: test-model}
listeners:
  - name: calc
    type: wasm
    module: %s
    description: Answers <Done>, which no listener takes
    payload:
      root: Ops
      fields:
        - {name: Do, type: string}
        - {name: Path, type: string, optional: true}
        - {name: Arg, type: string, optional: true}
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts to whoever OriginalSender names
  - name: mathbot
    agent: true
    description: Asks calc
    prompt: You are mathbot.
    peers: [calc]
`, m.URL, ops)
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{WasmCache: wasmCache, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name, to, body, want string
	}{
		{"a WASM guest without a response contract", "calc", `<Ops xmlns=""><Do>ping</Do></Ops>`,
			"Answer <Done> from calc has no route"},
		{"a Go handler sending to a name nobody has", "shouter",
			`<GreetingResponse xmlns=""><Message>hi</Message><OriginalSender>nobody</OriginalSender></GreetingResponse>`,
			"Answer <ShoutedResponse> from shouter has no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := make(collector, 64)
			env := stage.AppendEnvelope(nil, "tester", tc.to, stage.NewThreadID(), []byte(tc.body))
			if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
				t.Fatal(err)
			}
			e := c.await(t, pump.EventHuh, pump.EventReply, pump.EventComplete)
			if diff := cmp.Diff([]string{string(pump.EventHuh), "tester", tc.want},
				[]string{string(e.Kind), e.To, e.Error}); diff != "" {
				t.Errorf("what the caller got: kind, to, error (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("Ask", func(t *testing.T) {
		_, err := o.Pump.Ask(ctx, "tester", "shouter", &hello.GreetingResponse{Message: "hi", OriginalSender: "nobody"})
		var ae *pump.AskError
		if !errors.As(err, &ae) || !errors.Is(err, failure.ErrNoRoute) ||
			ae.Event.Error != "Answer <ShoutedResponse> from shouter has no route" {
			t.Fatalf("Ask: %v, want an *AskError saying the answer has no route", err)
		}
	})

	t.Run("an agent calling such a listener", func(t *testing.T) {
		answer, err := o.AskText(ctx, "mathbot", "ping calc")
		if err != nil {
			t.Fatal(err)
		}
		if text, _ := PayloadText(answer.Payload); text != "calc could not answer" {
			t.Errorf("answer %q", text)
		}
		if m.Count() < 2 {
			t.Fatalf("the model was asked %d times, want the call's result asked about", m.Count())
		}
		var results []string
		for _, msg := range m.Request(t, 1) {
			if msg.Role == "tool" {
				results = append(results, msg.Content)
			}
		}
		if len(results) != 1 || !strings.Contains(results[0], "Answer <Done> from calc has no route") {
			t.Errorf("the call's result the model read: %q, want the <huh> saying the answer has no route", results)
		}
	})
}
