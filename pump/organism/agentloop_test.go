package organism

import (
	"context"
	"encoding/xml"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// startConfigured builds and starts an organism from cfg, shut down when the
// test ends.
func startConfigured(t *testing.T, cfg *config.Organism, opts Options) *Organism {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
		if testing.Verbose() {
			opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	o, err := New(cfg, opts)
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
	return o
}

const mathbot = `listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tools: [calculate]
`

// TestNativeParallelToolCalls: two calculate calls in one reply are sent
// together and both answered; the next request carries the assistant
// message with both calls, each followed by its own result bound to its id.
func TestNativeParallelToolCalls(t *testing.T) {
	m := scripted(t, config.OpenAI,
		call(scriptedCall{"c1", "calculate", `{"Expression":"6*7"}`}, scriptedCall{"c2", "calculate", `{"Expression":"2+2"}`}),
		say("6*7 is 42 and 2+2 is 4."))
	o := wireOrganism(t, m, mathbot)
	if got := ask(t, o, "mathbot", "six times seven, and two plus two?"); got != "6*7 is 42 and 2+2 is 4." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	tools, _ := reqs[0]["tools"].([]any)
	if len(tools) != 1 || !strings.Contains(jsonOf(tools), `"name":"calculate"`) ||
		!strings.Contains(jsonOf(tools), `"Expression"`) {
		t.Errorf("tools offered: %s", jsonOf(tools))
	}
	if hasText(reqs[0], "<Calculate>") || hasText(reqs[0], "xs:schema") {
		t.Errorf("native mode still sends XML schemas in the prompt: %s", jsonOf(reqs[0]["messages"]))
	}
	ms := messages(reqs[1])
	var roles []string
	for _, msg := range ms {
		roles = append(roles, fmt.Sprint(msg["role"]))
	}
	if got := strings.Join(roles[len(roles)-4:], ","); got != "user,assistant,tool,tool" {
		t.Fatalf("roles %v", roles)
	}
	asst := ms[len(ms)-3]
	if !strings.Contains(jsonOf(asst["tool_calls"]), `"id":"c1"`) || !strings.Contains(jsonOf(asst["tool_calls"]), `"id":"c2"`) {
		t.Errorf("assistant message %s", jsonOf(asst))
	}
	results := toolMessages(reqs[1])
	if !strings.Contains(results["c1"], `"Value":"42"`) || !strings.Contains(results["c2"], `"Value":"4"`) {
		t.Errorf("results %v", results)
	}
	if ms[len(ms)-2]["tool_call_id"] != "c1" || ms[len(ms)-1]["tool_call_id"] != "c2" {
		t.Errorf("results out of the calls' order: %s", jsonOf(ms[len(ms)-2:]))
	}
}

// TestNativeBadCallsAnsweredAtOnce: a call with an argument the payload
// does not have, one of a function that does not exist and one whose
// arguments are not JSON are answered at once — nothing is sent — with
// results saying what is wrong, and the model corrects itself.
func TestNativeBadCallsAnsweredAtOnce(t *testing.T) {
	m := scripted(t, config.OpenAI,
		call(scriptedCall{"b1", "calculate", `{"Expr":"6*7"}`}, scriptedCall{"b2", "calculator", `{"Expression":"1"}`},
			scriptedCall{"b3", "calculate", `{"Expression": "6*7"`}, scriptedCall{"b4", "calculate", `{"Expression": 42}`}),
		call(scriptedCall{"g1", "calculate", `{"Expression":"6*7"}`}),
		say("42"))
	o := wireOrganism(t, m, mathbot)
	var toCalculate atomic.Int64
	defer o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "calculate" {
			toCalculate.Add(1)
		}
	}))()
	if got := ask(t, o, "mathbot", "6*7?"); got != "42" {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	results := toolMessages(reqs[1])
	for id, want := range map[string][]string{
		"b1": {"Invalid arguments for calculate", "Expr", "Nothing was sent"},
		"b2": {`There is no function "calculator"`, "The functions are: calculate"},
		"b3": {"not a JSON object", "not valid JSON"},
		"b4": {"Invalid arguments for calculate", "Expression", "string"},
	} {
		for _, w := range want {
			if !strings.Contains(results[id], w) {
				t.Errorf("result of %s %q does not say %q", id, results[id], w)
			}
		}
	}
	if !strings.Contains(toolMessages(reqs[2])["g1"], `"Value":"42"`) {
		t.Errorf("corrected call's result: %v", toolMessages(reqs[2]))
	}
	if n := toCalculate.Load(); n != 1 {
		t.Errorf("calculate received %d messages, want only the corrected call's", n)
	}
}

// TestNativeToolRoundPerProvider: one tool round against an
// anthropic-shaped and an ollama-shaped model: the call runs, and the
// result goes back in the provider's own form bound to the call.
func TestNativeToolRoundPerProvider(t *testing.T) {
	t.Run("anthropic", func(t *testing.T) {
		m := scripted(t, config.Anthropic,
			modelTurn{text: "Let me compute.", calls: []scriptedCall{{"toolu_01", "calculate", `{"Expression":"6*7"}`}}},
			say("It is 42."))
		o := wireOrganism(t, m, mathbot)
		if got := ask(t, o, "mathbot", "6*7?"); got != "It is 42." {
			t.Fatalf("reply %q", got)
		}
		reqs := m.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		if tools := jsonOf(reqs[0]["tools"]); !strings.Contains(tools, `"input_schema"`) || !strings.Contains(tools, `"calculate"`) {
			t.Errorf("tools %s", tools)
		}
		ms := messages(reqs[1])
		last := jsonOf(ms[len(ms)-1])
		if ms[len(ms)-1]["role"] != "user" || !strings.Contains(last, `"type":"tool_result"`) ||
			!strings.Contains(last, `"tool_use_id":"toolu_01"`) || !strings.Contains(last, `42`) {
			t.Errorf("last message %s", last)
		}
		if prev := jsonOf(ms[len(ms)-2]); !strings.Contains(prev, `"type":"tool_use"`) || !strings.Contains(prev, "Let me compute.") {
			t.Errorf("assistant message %s", prev)
		}
	})
	t.Run("ollama", func(t *testing.T) {
		m := scripted(t, config.Ollama, call(scriptedCall{"", "calculate", `{"Expression":"6*7"}`}), say("It is 42."))
		o := wireOrganism(t, m, mathbot)
		if got := ask(t, o, "mathbot", "6*7?"); got != "It is 42." {
			t.Fatalf("reply %q", got)
		}
		reqs := m.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		ms := messages(reqs[1])
		last := ms[len(ms)-1]
		if last["role"] != "tool" || last["tool_name"] != "calculate" || !strings.Contains(fmt.Sprint(last["content"]), "42") {
			t.Errorf("last message %s", jsonOf(last))
		}
	})
}

// TestXMLModeSplitsOnlyPeerPayloads: with tool_calling: xml only an
// element naming a peer's payload is sent; other markup stays in the text;
// a refused message comes back as actionable text (the validation error
// and the peers by name, never base64); the final answer keeps its markup
// byte for byte.
func TestXMLModeSplitsOnlyPeerPayloads(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"xbot": {
		"In HTML you would write <b>rain</b>. <Calculate><Expr>6*7</Expr></Calculate>",
		"Sorry: <Calculate><Expression>6*7</Expression></Calculate>",
		"In HTML you would write <b>rain</b>; 6*7 is 42.",
	}})
	o := agentOrganism(t, m, `listeners:
  - name: xbot
    agent: true
    description: answers in XML mode
    prompt: You are xbot.
    tool_calling: xml
    tools: [calculate]
`)
	if got := ask(t, o, "xbot", "go"); got != "In HTML you would write <b>rain</b>; 6*7 is 42." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("xbot")
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if _, ok := reqs[0].Body["tools"]; ok {
		t.Error("XML mode offered functions")
	}
	refused := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]
	for _, w := range []string{"Invalid payload structure", "Expr", "Peers you may address: calculate (payload <Calculate>)"} {
		if !strings.Contains(refused, w) {
			t.Errorf("feedback %q does not say %q", refused, w)
		}
	}
	if strings.Contains(refused, "original-attempt") || strings.Contains(refused, "PENhbGN1bGF0") {
		t.Errorf("feedback carries the base64 attempt: %q", refused)
	}
	if result := reqs[2].Messages[len(reqs[2].Messages)-1]["content"]; result != "[From calculate]\n"+`{"Expression":"6*7","Value":"42"}` {
		t.Errorf("result %q", result)
	}
}

// TestBackendToolCallingXML: a backend's tool_calling: xml applies to the
// agents it serves; the agent's own setting wins.
func TestBackendToolCallingXML(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"a": {"<Calculate><Expression>1+1</Expression></Calculate>", "2"},
		"b": {"plain"}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test, tool_calling: xml}
listeners:
  - {name: a, agent: true, description: d, prompt: You are a., tools: [calculate]}
  - {name: b, agent: true, description: d, prompt: You are b., tools: [calculate], tool_calling: native}
`, m.URL)))
	if err != nil {
		t.Fatal(err)
	}
	o := startConfigured(t, cfg, Options{})
	if got := ask(t, o, "a", "1+1?"); got != "2" {
		t.Fatalf("a replied %q", got)
	}
	if got := ask(t, o, "b", "hi"); got != "plain" {
		t.Fatalf("b replied %q", got)
	}
	if _, ok := m.requests("a")[0].Body["tools"]; ok {
		t.Error("a (xml by its backend) was offered functions")
	}
	if _, ok := m.requests("b")[0].Body["tools"]; !ok {
		t.Error("b (native by its own setting) was not offered functions")
	}
}

// TestToolCallingConfigErrors: bad tool_calling and context_window values
// are refused with file:line.
func TestToolCallingConfigErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`llm: {backends: [{provider: xai, tool_calling: json}]}`, `organism.yaml:1:` + ` llm.backends[0].tool_calling: unknown tool_calling "json" (want native or xml)`},
		{`llm: {backends: [{provider: xai, context_window: 10}]}`, `llm.backends[0].context_window: want at least 1024 tokens`},
		{"listeners:\n  - {name: a, agent: true, description: d, prompt: p, tool_calling: XML-ish}\n",
			`organism.yaml:2:` + ` listeners[0].tool_calling: unknown tool_calling "XML-ish"`},
		{"listeners:\n  - {name: a, description: d, payload_class: hello.Greeting, handler: hello.handle_greeting, tool_calling: xml}\n",
			"only agents take tool_calling"},
		{"listeners:\n  - {name: a, description: d, payload_class: hello.Greeting, handler: hello.handle_greeting, response: {root: R, fields: [{name: X}]}}\n",
			"response is for wasm listeners and YAML agents"},
		{"listeners:\n  - name: a\n    agent: true\n    description: d\n    prompt: p\n    response: {root: R, fields: [{name: X, type: money}]}\n",
			`unknown field type "money"`},
	}
	for _, tc := range tests {
		_, err := config.Parse("organism.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\nerror %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// Forecast is the payload the structured-output test's caller takes.
const forecastAgent = `listeners:
  - name: weather
    agent: true
    description: Gives forecasts
    prompt: You are weather.
    response:
      root: Forecast
      fields:
        - {name: City, doc: the city}
        - {name: TempC, type: integer, doc: the temperature in Celsius}
        - {name: Note, optional: true}
`

// askPayload sends text to a YAML agent and returns the reply's payload.
func askPayload(t *testing.T, o *Organism, agent, text string) any {
	t.Helper()
	l, _ := o.Pump.Lookup(agent)
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString(text)
	replies := make(chan any, 4)
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	if _, err := o.Pump.Send(ctx, "console", agent, v.Interface(), pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply || e.Kind == pump.EventHuh {
			replies <- e.Payload
		}
	})); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-replies:
		return r
	case <-ctx.Done():
		t.Fatal("no reply")
		return nil
	}
}

// TestStructuredOutput: an agent with a declared response is asked for it
// as structured output (response_format json_schema); an answer that does
// not fit goes back to the model once with the reason; the fitting one
// reaches the caller as the Forecast payload, presence kept; a second
// misfit halts the turn with the reason.
func TestStructuredOutput(t *testing.T) {
	m := scripted(t, config.OpenAI, say(`{"City":"Oslo","TempC":"cold"}`), say(`{"City":"Oslo","TempC":-3,"Note":""}`))
	o := wireOrganism(t, m, forecastAgent)
	got := askPayload(t, o, "weather", "Oslo?")
	rv := reflect.ValueOf(got).Elem()
	if rv.Type().Name() != "" && rv.Type().Name() != "Forecast" || rv.Field(1).String() != "Oslo" || rv.Field(2).Int() != -3 {
		t.Fatalf("reply %#v", got)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	rf := jsonOf(reqs[0]["response_format"])
	if !strings.Contains(rf, `"type":"json_schema"`) || !strings.Contains(rf, `"name":"Forecast"`) || !strings.Contains(rf, `"TempC"`) {
		t.Errorf("response_format %s", rf)
	}
	if fb := lastUser(reqs[1]); !strings.Contains(fb, "does not fit the required Forecast format") || !strings.Contains(fb, "TempC") {
		t.Errorf("feedback %q", fb)
	}

	m2 := scripted(t, config.OpenAI, say(`not json`))
	o2 := wireOrganism(t, m2, forecastAgent)
	a, ok := askPayload(t, o2, "weather", "Oslo?").(*llm.Halted)
	if !ok || !strings.HasPrefix(a.Text, "[weather halted: its answer did not fit Forecast twice") {
		t.Fatalf("reply %#v", a)
	}
	if n := len(m2.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (the misfit went back once)", n)
	}
}

// TestHistoryTrimmedWithNote: past the context window the oldest history
// is left out with a note; an assistant message with tool calls stays
// with its results; the latest message is always sent.
func TestHistoryTrimmedWithNote(t *testing.T) {
	m := scripted(t, config.OpenAI, call(scriptedCall{"c1", "calculate", `{"Expression":"6*7"}`}), say("42"))
	o := wireOrganism(t, m, `listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tools: [calculate]
    context_window: 1024
`)
	long := strings.Repeat("blah ", 1000) + "what is 6*7?"
	if got := ask(t, o, "mathbot", long); got != "42" {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !hasText(reqs[0], "what is 6*7?") || hasText(reqs[0], "omitted") {
		t.Errorf("first request lost the latest message or noted an omission: %.300s", jsonOf(reqs[0]["messages"]))
	}
	if !hasText(reqs[1], "[1 earlier message of this conversation omitted to fit the context window]") {
		t.Errorf("no note of the omission: %s", jsonOf(reqs[1]["messages"]))
	}
	if hasText(reqs[1], "blah blah") {
		t.Error("the oldest message was not trimmed")
	}
	if !strings.Contains(toolMessages(reqs[1])["c1"], "42") {
		t.Errorf("the calls' results were trimmed: %s", jsonOf(reqs[1]["messages"]))
	}
}

// TestNativeLoopBounds: max_iterations counts model calls, tool rounds
// included; the progress guard halts a turn repeating the same call.
func TestNativeLoopBounds(t *testing.T) {
	t.Run("max_iterations", func(t *testing.T) {
		n := 0
		var mu sync.Mutex
		m := newWireModel(t, config.OpenAI, func(int, map[string]any) modelTurn {
			mu.Lock()
			defer mu.Unlock()
			n++
			return call(scriptedCall{fmt.Sprintf("c%d", n), "calculate", fmt.Sprintf(`{"Expression":"%d+1"}`, n)})
		})
		o := wireOrganism(t, m, strings.Replace(mathbot, "    tools: [calculate]\n", "    tools: [calculate]\n    max_iterations: 3\n", 1))
		if got := ask(t, o, "mathbot", "count"); got != "[mathbot halted: max_iterations (3) reached in this turn]" {
			t.Fatalf("reply %q", got)
		}
		if got := len(m.requests()); got != 3 {
			t.Errorf("%d model calls, want 3", got)
		}
	})
	t.Run("progress guard", func(t *testing.T) {
		m := newWireModel(t, config.OpenAI, func(n int, _ map[string]any) modelTurn {
			return call(scriptedCall{fmt.Sprintf("c%d", n), "calculate", `{"Expression":"1+1"}`})
		})
		o := wireOrganism(t, m, mathbot)
		if got := ask(t, o, "mathbot", "loop"); got != "[mathbot halted: no progress: the same output 3 times in a row]" {
			t.Fatalf("reply %q", got)
		}
		if got := len(m.requests()); got != 3 {
			t.Errorf("%d model calls, want 3", got)
		}
	})
}

// TestNativeAgentCallsAgent: an agent's peer agent is a function taking
// text; its answer is the call's result.
func TestNativeAgentCallsAgent(t *testing.T) {
	m := newWireModel(t, config.OpenAI, func(n int, body map[string]any) modelTurn {
		switch {
		case hasText(body, "You are poet."):
			return say("drops on the roof")
		case len(toolMessages(body)) == 0:
			return call(scriptedCall{"p1", "poet", `{"Text":"a haiku about rain"}`})
		}
		return say("The poet wrote: " + toolMessages(body)["p1"])
	})
	o := wireOrganism(t, m, `listeners:
  - {name: boss, agent: true, description: Plans, prompt: You are boss., peers: [poet]}
  - {name: poet, agent: true, description: Writes short poems, prompt: You are poet.}
`)
	if got := ask(t, o, "boss", "a poem please"); got != "The poet wrote: drops on the roof" {
		t.Fatalf("reply %q", got)
	}
}

// slowQuery is the payload of the restart test's slow tool.
type slowQuery struct {
	XMLName xml.Name `xml:"SlowQuery"`
	Text    string
}

// slowAnswer is its answer.
type slowAnswer struct {
	XMLName xml.Name `xml:"SlowAnswer"`
	Text    string
}

// TestNativeCallSurvivesRestart: an organism stopped while an agent's tool
// call is running starts again on the same data directory and completes
// the turn — the call is re-delivered, its answer is bound to the call by
// the ref kept with its thread, and the model is asked once more with the
// conversation as it was, never again for the call.
func TestNativeCallSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	m := newWireModel(t, config.OpenAI, func(n int, body map[string]any) modelTurn {
		if r := toolMessages(body)["s1"]; r != "" {
			return say("the slow tool said " + r)
		}
		return call(scriptedCall{"s1", "slow", `{"Text":"x"}`})
	})
	var phase atomic.Int32
	started := make(chan struct{}, 4)
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Slow", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, q *slowQuery, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				started <- struct{}{}
				if phase.Load() == 0 {
					<-ctx.Done() // the first run is stopped while the call runs
					return nil, ctx.Err()
				}
				return xmlpipe.Respond(&slowAnswer{Text: "done: " + q.Text}), nil
			})
		}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg := func() *config.Organism {
		c, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: slow, payload_class: test.SlowQuery, handler: test.Slow, description: Answers slowly}
  - {name: waiter, agent: true, description: waits, prompt: You are waiter., peers: [slow]}
`, m.URL)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o1, err := New(cfg(), Options{DataDir: dir, Catalog: cat, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := o1.Start(); err != nil {
		t.Fatal(err)
	}
	l, _ := o1.Pump.Lookup("waiter")
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString("ask slow")
	if _, err := o1.Pump.Send(context.Background(), "console", "waiter", v.Interface(), pump.OutletFunc(func(pump.Event) {})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(agentWait):
		t.Fatalf("the tool call never started (model requests: %s)", jsonOf(m.requests()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o1.ShutdownNow(ctx); err != nil {
		t.Fatalf("ShutdownNow: %v", err)
	}
	if n := len(m.requests()); n != 1 {
		t.Fatalf("%d model requests before the restart, want 1", n)
	}

	phase.Store(1)
	o2, err := New(cfg(), Options{DataDir: dir, Catalog: cat, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	replies := make(chan string, 4)
	defer o2.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply && e.From == "waiter" {
			if a, ok := e.Payload.(*llm.Answer); ok {
				replies <- a.Text
			}
		}
	}))()
	if err := o2.Start(); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o2)
	select {
	case got := <-replies:
		if got != `the slow tool said {"Text":"done: x"}` {
			t.Fatalf("answer after the restart %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the turn did not complete after the restart (model requests: %d)", len(m.requests()))
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d model requests in all, want 2 (the call was not asked for again)", n)
	}
}

// TestNativeCallTimesOut: a tool that does not answer within its timeout
// is answered for the model — the call's result says it timed out — and
// the model goes on.
func TestNativeCallTimesOut(t *testing.T) {
	m := newWireModel(t, config.OpenAI, func(n int, body map[string]any) modelTurn {
		if r, ok := toolMessages(body)["s1"]; ok {
			return say("gave up: " + r)
		}
		return call(scriptedCall{"s1", "slow", `{"Text":"x"}`})
	})
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Slow", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, _ *slowQuery, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: slow, payload_class: test.SlowQuery, handler: test.Slow, description: Never answers, timeout: 300ms}
  - {name: waiter, agent: true, description: waits, prompt: You are waiter., peers: [slow]}
`, m.URL)))
	if err != nil {
		t.Fatal(err)
	}
	o := startConfigured(t, cfg, Options{Catalog: cat})
	got := ask(t, o, "waiter", "ask slow")
	if !strings.HasPrefix(got, "gave up: Error: The call failed: ") || !strings.Contains(got, "handler timeout 300ms") {
		t.Fatalf("reply %q", got)
	}
}
