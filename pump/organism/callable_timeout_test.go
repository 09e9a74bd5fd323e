package organism

import (
	"context"
	"errors"
	"fmt"
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

// slowCallee starts an organism whose agent worker is callable (its
// callable: block extra, its listener keys worker) and may call the tool
// slow, which runs until its context ends (after slowTimeout) and then
// sends the cause on stopped. worker's model calls slow once, then answers
// with the call's result.
func slowCallee(t *testing.T, worker, callable, slowTimeout string) (o *Organism, m *wireModel, stopped chan error) {
	t.Helper()
	stopped = make(chan error, 4)
	o, m = slowCalleeWith(t, worker, callable, slowTimeout, func(ctx context.Context) (xmlpipe.Response, error) {
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	return o, m, stopped
}

// slowCalleeWith is slowCallee whose tool slow runs slow.
func slowCalleeWith(t *testing.T, worker, callable, slowTimeout string,
	slow func(ctx context.Context) (xmlpipe.Response, error)) (o *Organism, m *wireModel) {
	t.Helper()
	m = newWireModel(t, config.OpenAI, func(n int, body map[string]any) modelTurn {
		if r, ok := toolMessages(body)["s1"]; ok {
			return say("slow said: " + r)
		}
		return call(scriptedCall{"s1", "slow", `{"Text":"x"}`})
	})
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Slow", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, _ *slowQuery, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return slow(ctx)
			})
		}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", fmt.Appendf(nil, `organism: {name: callee}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: slow, payload_class: test.SlowQuery, handler: test.Slow, description: Answers slowly, timeout: %s}
  - name: worker
    agent: true
    description: works
    prompt: You are worker.
    peers: [slow]
%s    callable:
      description: Does the work
      parameters:
        - {name: Job, required: true}
      requires: [slow]
%s`, m.URL, slowTimeout, worker, callable))
	if err != nil {
		t.Fatal(err)
	}
	return startConfigured(t, cfg, Options{Catalog: cat}), m
}

// callWorker calls worker.call from outside the organism.
func callWorker(t *testing.T, o *Organism) (pump.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return o.Pump.AskXML(ctx, "peer", "worker.call", []byte(`<WorkerCall xmlns=""><Job>the job</Job></WorkerCall>`))
}

// TestCallableCallOutlivesTheCalleesTurnTimeout: a call lasts as long as
// its callee's conversation, not one handler call of it: a callable agent
// whose turns each end within its 1s timeout, but whose tool call takes
// longer than that, answers its call. The call listener has no handler
// timeout of its own.
func TestCallableCallOutlivesTheCalleesTurnTimeout(t *testing.T) {
	// slow runs until its own timeout, the agent's: it began after the
	// call, so a call bounded by the agent's timeout would be cut first.
	o, m, stopped := slowCallee(t, "    timeout: 1s\n", "", "1s")
	ev, err := callWorker(t, o)
	if err != nil {
		t.Fatalf("the call failed: %v", err)
	}
	a, ok := ev.Payload.(*llm.Answer)
	if !ok || !strings.HasPrefix(a.Text, "slow said: ") || !strings.Contains(a.Text, "handler timeout 1s") {
		t.Fatalf("the call answered %T %+v, want the agent's answer after its slow tool call", ev.Payload, ev.Payload)
	}
	if err := <-stopped; !errors.Is(err, pump.ErrHandlerTimeout) {
		t.Errorf("slow stopped by %v, want its own timeout", err)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
	if info := listenerInfo(t, o, "worker.call"); info.Timeout != 0 {
		t.Errorf("worker.call has a handler timeout of %s, want none (its call timeout bounds it)", info.Timeout)
	}
}

// TestCallableTimeoutKillsTheCall: a call whose callee conversation goes
// on past callable.timeout fails with an error saying so, and the
// conversation is killed: its tool call is stopped and its agent is not
// asked again. The organism serves the next call.
func TestCallableTimeoutKillsTheCall(t *testing.T) {
	o, m, stopped := slowCallee(t, "", "      timeout: 1s\n", "1h")
	_, err := callWorker(t, o)
	var ae *pump.AskError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "worker did not answer within 1s (callable.timeout)") ||
		!strings.Contains(err.Error(), "its conversation was killed") {
		t.Fatalf("the call ended with %v, want a failed call saying the callable timeout passed", err)
	}
	select {
	case cause := <-stopped:
		if !errors.Is(cause, pump.ErrConversationKilled) {
			t.Errorf("the callee's tool call stopped by %v, want its conversation killed", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the callee's tool call still runs after the call timed out")
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the killed conversation's agent is not asked again", n)
	}
	// The next call runs (and times out the same way): nothing was left
	// holding the call listener or the callee.
	if _, err := callWorker(t, o); !errors.As(err, &ae) || !strings.Contains(err.Error(), "callable.timeout") {
		t.Fatalf("the next call ended with %v", err)
	}
}

// TestHaltKeepsACallsConversation: a halt of every listener while a call
// runs stops the work where it runs — the callee's tool call — but not the
// call: after resume the callee's conversation goes on from the
// interrupted tool call (its model is not asked its first turn again) and
// its answer is the call's.
func TestHaltKeepsACallsConversation(t *testing.T) {
	var resumed atomic.Bool
	started, halted := make(chan struct{}, 4), make(chan error, 4)
	o, m := slowCalleeWith(t, "", "", "1h", func(ctx context.Context) (xmlpipe.Response, error) {
		if resumed.Load() {
			return xmlpipe.Respond(&slowAnswer{Text: "done"}), nil
		}
		started <- struct{}{}
		<-ctx.Done()
		halted <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	type result struct {
		ev  pump.Event
		err error
	}
	done := make(chan result, 1)
	go func() {
		ev, err := callWorker(t, o)
		done <- result{ev, err}
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the callee's tool call never started")
	}
	if _, err := o.Pump.Halt(pump.HaltAll); err != nil {
		t.Fatal(err)
	}
	if cause := <-halted; !errors.Is(cause, pump.ErrHalted) {
		t.Fatalf("the tool call stopped by %v, want the halt", cause)
	}
	resumed.Store(true)
	o.Pump.Unhalt()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end after resume")
	}
	if r.err != nil {
		t.Fatalf("the call failed: %v", r.err)
	}
	if a, ok := r.ev.Payload.(*llm.Answer); !ok || !strings.Contains(a.Text, "done") {
		t.Fatalf("the call answered %T %+v", r.ev.Payload, r.ev.Payload)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the callee's conversation went on, not again from its start", n)
	}
}

// TestCallTimeoutDefaults: a call is bounded by callable.timeout, else
// config.DefaultCallTimeout, raised for an agent whose calls (or its peer
// agents') may wait for a human to that wait and one more turn — never by
// the callee's handler timeout.
func TestCallTimeoutDefaults(t *testing.T) {
	const worker = "  - name: worker\n    agent: true\n    description: Works\n    prompt: You are worker.\n" +
		"    timeout: 2m\n    callable: {description: Does the work, parameters: [{name: Job}]%s}\n"
	const helper = "  - name: helper\n    agent: true\n    description: Helps\n    prompt: You are helper.\n" +
		"    tools: [run_command]\n    approval: [run_command]\n    approval_timeout: 3h\n"
	for _, tc := range []struct {
		name, yaml, call string
		want             time.Duration
	}{
		{name: "agent", yaml: fmt.Sprintf(worker, ""), call: "worker.call", want: config.DefaultCallTimeout},
		{name: "own timeout", yaml: fmt.Sprintf(worker, ", timeout: 10s"), call: "worker.call", want: 10 * time.Second},
		{name: "approval list", yaml: fmt.Sprintf(worker, "") + "    tools: [run_command]\n    approval: [run_command]\n",
			call: "worker.call", want: time.Hour + time.Minute + pump.DefaultAgentTimeout},
		{name: "peer's approval list", yaml: fmt.Sprintf(worker, "") + "    peers: [helper]\n" + helper,
			call: "worker.call", want: 3*time.Hour + 2*time.Minute + pump.DefaultAgentTimeout},
		{name: "own timeout beats the approval wait", call: "worker.call", want: 45 * time.Minute,
			yaml: fmt.Sprintf(worker, ", timeout: 45m") + "    tools: [run_command]\n    approval: [run_command]\n"},
		{name: "tool", call: "calculate.call", want: config.DefaultCallTimeout,
			yaml: "  - name: calculate\n    payload_class: tools.Calculate\n    handler: tools.Calculate\n" +
				"    description: Evaluates arithmetic\n    callable: {description: Evaluates, parameters: [{name: Expression, required: true}]}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := agentOrganismWith(t, newScriptedModel(t, nil), "listeners:\n"+tc.yaml, Options{})
			l, ok := o.Pump.Lookup(tc.call)
			if !ok {
				t.Fatal("no " + tc.call)
			}
			c, ok := l.Handler.(*caller)
			if !ok {
				t.Fatalf("%s's handler is a %T", tc.call, l.Handler)
			}
			if c.timeout != tc.want {
				t.Errorf("call timeout %s, want %s", c.timeout, tc.want)
			}
			if info := listenerInfo(t, o, tc.call); info.Timeout != 0 {
				t.Errorf("%s has a handler timeout of %s, want none", tc.call, info.Timeout)
			}
		})
	}
}

// listenerInfo is the pump's introspection of the listener called name.
func listenerInfo(t *testing.T, o *Organism, name string) pump.ListenerInfo {
	t.Helper()
	for _, info := range o.Pump.Listeners() {
		if info.Name == name {
			return info
		}
	}
	t.Fatalf("no listener %s", name)
	return pump.ListenerInfo{}
}
