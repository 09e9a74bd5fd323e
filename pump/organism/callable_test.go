package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// calleeYAML is organism B of the callable tests: calculate declared
// callable, a greeter beside it that the callable's requires: leaves out,
// and profiles for the parties that call it. gateway, when not empty, is
// the gateway to organism A (its trusted identity file).
func calleeYAML(gateway string) []byte {
	y := `organism: {name: callee-b}
meta: {allow_remote: true}
profiles:
  public:
    description: what a peer may call
    listeners: ["calculate*"]
  greeters:
    listeners: [greeter, calculate.call]
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
    callable:
      description: Evaluates an arithmetic expression and answers its value
      parameters:
        - {name: Expression, required: true, description: the expression}
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
`
	if gateway != "" {
		y += fmt.Sprintf(`gateways:
  - name: a
    trusted_identity: %s
    profile: public
    export: [CalculateCall]
`, gateway)
	}
	return []byte(y)
}

// callWatch records, for the messages delivered to calculate, the
// conversation and the profile of the thread they travel on.
type callWatch struct {
	o  *Organism
	mu sync.Mutex
	at []struct{ conversation, from, profile string }
}

func (w *callWatch) observe(e pump.Event) {
	if e.Kind != pump.EventMessage || e.Listener != "calculate" {
		return
	}
	prof, _ := w.o.threads.Profile(e.Thread)
	w.mu.Lock()
	w.at = append(w.at, struct{ conversation, from, profile string }{e.Conversation, e.From, prof})
	w.mu.Unlock()
}

func (w *callWatch) seen() []struct{ conversation, from, profile string } {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(w.at[:0:0], w.at...)
}

// TestCallableLocal: a call to calculate.call becomes calculate's task on
// a conversation of its own, begun by the call's sender name, under the
// caller's profile narrowed by the callable's own; its answer is the
// call's. A caller whose profile reaches the call but not calculate is
// refused: the callable cannot reach beyond the host's profile (Host
// Sovereignty), and the refusal is data (a failed call), not a crash.
func TestCallableLocal(t *testing.T) {
	o := startOrganism(t, string(calleeYAML("")))
	w := &callWatch{o: o}
	o.Pump.Watch(pump.OutletFunc(w.observe))
	l, ok := o.Pump.Lookup("calculate.call")
	if !ok || l.Payload.Name() != "CalculateCall" || !strings.Contains(l.Description, "arithmetic expression") {
		t.Fatalf("no calculate.call listener with the declared interface: %+v", l)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := o.Pump.AskXML(pump.WithProfile(ctx, "public"), "peer", "calculate.call",
		[]byte(`<CalculateCall xmlns=""><Expression>6 * 7</Expression></CalculateCall>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%+v", ev.Payload); !strings.Contains(got, "42") {
		t.Fatalf("call answered %s, want 42", got)
	}
	seen := w.seen()
	if len(seen) != 1 {
		t.Fatalf("calculate got %d messages, want 1: %+v", len(seen), seen)
	}
	if seen[0].from != callSender("calculate") || seen[0].profile != "callable:calculate&public" {
		t.Errorf("callee task from %q under %q, want from %q under callable:calculate&public",
			seen[0].from, seen[0].profile, callSender("calculate"))
	}

	// The greeters profile reaches calculate.call, not calculate.
	_, err = o.Pump.AskXML(pump.WithProfile(ctx, "greeters"), "peer", "calculate.call",
		[]byte(`<CalculateCall xmlns=""><Expression>1 + 1</Expression></CalculateCall>`))
	var ae *pump.AskError
	if !errors.As(err, &ae) {
		t.Fatalf("a call whose caller may not reach calculate: %v, want a failed call", err)
	}
	if n := len(w.seen()); n != 1 {
		t.Errorf("calculate was reached under a profile that does not reach it (%d messages)", n)
	}
	// Without a profile the call still runs within the callable's own.
	ev, err = o.Pump.AskXML(ctx, "peer", "calculate.call", []byte(`<CalculateCall xmlns=""><Expression>2 ** 5</Expression></CalculateCall>`))
	if err != nil || !strings.Contains(fmt.Sprintf("%+v", ev.Payload), "32") {
		t.Fatalf("call without a profile: %+v, %v", ev.Payload, err)
	}
	if s := w.seen(); len(s) != 2 || s[1].profile != "callable:calculate" {
		t.Errorf("callee without a caller profile ran under %+v, want callable:calculate", s)
	}
	// A malformed call is refused as data; the organism stays up.
	if _, err := o.Pump.AskXML(ctx, "peer", "calculate.call", []byte(`<CalculateCall xmlns=""><Nope/></CalculateCall>`)); err == nil {
		t.Fatal("a call missing its required argument was accepted")
	}
}

// TestCallableFederated: organism B declares calculate callable and
// exports its call through the gateway to A, which grants A the public
// profile; A's agent whose peers name gateway b is offered the call as a
// tool with the declared interface, calls it, and gets B's answer —
// computed on a conversation of B's own — as the tool's result.
func TestCallableFederated(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	cfgB, err := config.Parse("b.yaml", calleeYAML(a.pub))
	if err != nil {
		t.Fatal(err)
	}
	orgB, addr := startFed(t, cfgB, b, Options{}, true)
	w := &callWatch{o: orgB}
	orgB.Pump.Watch(pump.OutletFunc(w.observe))

	m := newScriptedModel(t, map[string][]string{
		"mathbot": {toolCalls(scriptedCall{"c1", "calculate_call", `{"Expression":"6 * 7"}`}), "The answer is 42."},
	})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfgA, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: caller-a}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: mathbot, agent: true, description: Answers arithmetic questions, prompt: You are mathbot., peers: [b]}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [CalculateCall]}
`, m.URL, addr, b.pub))
	if err != nil {
		t.Fatal(err)
	}
	orgA, _ := startFed(t, cfgA, a, Options{}, false)
	waitImport(t, orgA, "calculate.call")
	if got := ask(t, orgA, "mathbot", "what is six times seven?"); got != "The answer is 42." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("mathbot")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if tools := jsonOf(reqs[0].Body["tools"]); !strings.Contains(tools, `"name":"calculate_call"`) ||
		!strings.Contains(tools, `"Expression"`) || !strings.Contains(tools, "arithmetic expression") {
		t.Errorf("the callable is not offered as a tool with its declared interface:\n%s", tools)
	}
	if result := reqs[1].Messages[len(reqs[1].Messages)-1]; result["role"] != "tool" || !strings.Contains(result["content"], "42") {
		t.Errorf("B's answer did not reach the agent as the call's result: %q", result)
	}
	seen := w.seen()
	if len(seen) != 1 || seen[0].from != callSender("calculate") || seen[0].profile != "callable:calculate&public" {
		t.Errorf("B ran the call as %+v, want one task from %s under callable:calculate&public", seen, callSender("calculate"))
	}
}

// TestCallableReload: a reload that drops a listener's callable:
// declaration removes its call listener with it; one that adds it back
// registers the call again.
func TestCallableReload(t *testing.T) {
	dir := t.TempDir()
	o, err := New(parseIn(t, dir, string(calleeYAML(""))), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	if _, ok := o.Pump.Lookup("calculate.call"); !ok {
		t.Fatal("no calculate.call")
	}
	plain := strings.Replace(string(calleeYAML("")), `    callable:
      description: Evaluates an arithmetic expression and answers its value
      parameters:
        - {name: Expression, required: true, description: the expression}
`, "", 1)
	if _, err := o.Reload(parseIn(t, dir, plain)); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Pump.Lookup("calculate.call"); ok {
		t.Fatal("calculate.call outlived its callable: declaration")
	}
	if _, ok := o.Pump.Lookup("calculate"); !ok {
		t.Fatal("calculate went with its call")
	}
	if _, err := o.Reload(parseIn(t, dir, string(calleeYAML("")))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := o.Pump.AskXML(ctx, "peer", "calculate.call", []byte(`<CalculateCall xmlns=""><Expression>3 * 3</Expression></CalculateCall>`))
	if err != nil || !strings.Contains(fmt.Sprintf("%+v", ev.Payload), "9") {
		t.Fatalf("call after the reload: %+v, %v", ev.Payload, err)
	}
}

// FuzzCallTask: whatever a call payload holds, the task built from it is
// well-formed XML whose root is the target's and whose children carry the
// arguments' text unchanged (no argument can inject markup), or an error.
func FuzzCallTask(f *testing.F) {
	f.Add([]byte(`<CalculateCall><Expression>6 * 7</Expression></CalculateCall>`), false)
	f.Add([]byte(`<C><q>&lt;x/&gt;&amp;</q><d>1</d></C>`), true)
	f.Add([]byte(`<C><a:b xmlns:a="u">]]&gt;</a:b></C>`), false)
	pt, err := callParams(config.Listener{Name: "calculate", Callable: config.Callable{Description: "d",
		Parameters: []config.Parameter{{Name: "Expression"}}}}).PayloadType(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, agent bool) {
		args, err := callArgs(body)
		if err != nil {
			return
		}
		task, err := taskFor(pump.Listener{Name: "target", Payload: pt, Agent: agent}, args)
		if err != nil {
			return
		}
		back, err := callArgs(task)
		if err != nil {
			t.Fatalf("task %q is not well-formed: %v", task, err)
		}
		if !agent && len(back) != len(args) {
			t.Fatalf("task %q holds %d arguments, the call %d", task, len(back), len(args))
		}
		for i := range back {
			if !agent && back[i] != args[i] {
				t.Fatalf("argument %d: %+v became %+v", i, args[i], back[i])
			}
		}
	})
}

// TestCallableLocalAgent: an agent of the same organism calls a callable
// agent by naming its <name>.call among its peers: the configuration
// accepts the name, the agent is offered the call as a tool, and the
// callee's answer, computed on a conversation of its own, is the tool's
// result.
func TestCallableLocalAgent(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss":   {toolCalls(scriptedCall{"c1", "worker_call", `{"Job":"count sheep"}`}), "Worker says done."},
		"worker": {"I counted 3 sheep."},
	})
	o := agentOrganismWith(t, m, `listeners:
  - name: boss
    agent: true
    description: Delegates
    prompt: You are boss.
    peers: [worker.call]
  - name: worker
    agent: true
    description: Works
    prompt: You are worker.
    callable:
      description: Does the work
      parameters:
        - {name: Job, required: true}
`, Options{})
	if got := ask(t, o, "boss", "get it done"); got != "Worker says done." {
		t.Fatalf("boss answered %q", got)
	}
	boss, worker := m.requests("boss"), m.requests("worker")
	if len(boss) != 2 || len(worker) != 1 {
		t.Fatalf("%d requests of boss and %d of worker, want 2 and 1", len(boss), len(worker))
	}
	if tools := jsonOf(boss[0].Body["tools"]); !strings.Contains(tools, `"name":"worker_call"`) {
		t.Errorf("boss is not offered worker.call: %s", tools)
	}
	task := worker[0].Messages[len(worker[0].Messages)-1]
	if want := "[From " + callSender("worker") + "]\nJob: count sheep"; task["content"] != want {
		t.Errorf("worker's task %q, want %q", task["content"], want)
	}
	if result := boss[1].Messages[len(boss[1].Messages)-1]; result["role"] != "tool" ||
		!strings.Contains(result["content"], "I counted 3 sheep.") {
		t.Errorf("the callee's answer did not reach boss as the call's result: %q", result)
	}
}
