package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// deadBackendURL is the base_url of a backend nobody listens on.
const deadBackendURL = "http://127.0.0.1:1"

// TestHaltedCalleeFails: an agent whose model call fails halts; reached
// through its callable (by a peer's call, or by another agent's tool call)
// or as another agent's peer, the halt is a failed call whose error says
// only that the agent halted — never the backend's URL or the model, which
// stay in the log and the agent's history. The console, the organism's own
// user, still reads the reason.
func TestHaltedCalleeFails(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"viacall": {toolCalls(scriptedCall{"c1", "worker_call", `{"Job":"count sheep"}`}), "Worker failed."},
		"viapeer": {toolCalls(scriptedCall{"c1", "worker", `{"Text":"count sheep"}`}), "Worker failed."},
	})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	doc := fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - {provider: openai, name: live, api_key_env: TEST_LLM_KEY, base_url: %s, supported_models: [gpt-test]}
    - {provider: openai, name: dead, api_key_env: TEST_LLM_KEY, base_url: %s, supported_models: [dead-model]}
listeners:
  - {name: viacall, agent: true, description: Delegates by call, prompt: You are viacall., model: gpt-test, peers: [worker.call]}
  - {name: viapeer, agent: true, description: Delegates to a peer, prompt: You are viapeer., model: gpt-test, peers: [worker]}
  - name: worker
    agent: true
    description: Works
    prompt: You are worker.
    model: dead-model
    callable:
      description: Does the work
      parameters:
        - {name: Job, required: true}
`, m.URL, deadBackendURL)
	cfg, err := config.Parse("organism.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	leaks := func(s string) bool { return strings.Contains(s, "127.0.0.1") || strings.Contains(s, "dead-model") }

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := o.Pump.AskXML(ctx, "peer", "worker.call", []byte(`<WorkerCall xmlns=""><Job>x</Job></WorkerCall>`))
	var ae *pump.AskError
	if !errors.As(err, &ae) {
		t.Fatalf("a peer's call of a halting worker: answer %+v, error %v; want a failed call", ev.Payload, err)
	}
	if leaks(err.Error()) || !strings.Contains(err.Error(), "worker could not finish: it halted") {
		t.Errorf("a peer's failed call says %q: want only that worker halted", err)
	}

	for _, boss := range []string{"viacall", "viapeer"} {
		if got := ask(t, o, boss, "get it done"); got != "Worker failed." {
			t.Fatalf("%s answered %q", boss, got)
		}
		reqs := m.requests(boss)
		if len(reqs) != 2 {
			t.Fatalf("%d requests of %s, want 2", len(reqs), boss)
		}
		result := reqs[1].Messages[len(reqs[1].Messages)-1]
		if result["role"] != "tool" || leaks(result["content"]) ||
			!strings.Contains(result["content"], "The call failed") ||
			!strings.Contains(result["content"], "worker could not finish: it halted") {
			t.Errorf("%s's tool result %q: want a failed call saying only that worker halted", boss, result["content"])
		}
	}

	if got := ask(t, o, "worker", "count sheep"); !strings.HasPrefix(got, "[worker halted: model call failed: ") ||
		!strings.Contains(got, deadBackendURL) {
		t.Errorf("the console got %q, want the halt's reason", got)
	}
}

// TestForeignCallers: the callers an agent does not tell why it halted are
// the conversations of callable calls and the federation peers (gateways,
// whatever their case); the console, bus sessions and embedding programs
// are the organism's own users.
func TestForeignCallers(t *testing.T) {
	l := &llmLayer{cfg: &config.Organism{Gateways: []config.Gateway{{Name: "Partner"}}}}
	for caller, want := range map[string]bool{
		callSender("worker"): true,
		"partner":            true,
		"Partner":            true,
		"console":            false,
		"websocket:alice":    false,
		AskFrom:              false,
	} {
		if got := l.foreign(caller); got != want {
			t.Errorf("foreign(%q) = %v, want %v", caller, got, want)
		}
	}
}
