package organism

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// chatLog is one request the scripted model received.
type chatLog struct {
	Agent    string // the agent named in the prompt ("You are <agent>")
	Body     map[string]any
	Messages []map[string]string
}

// scriptedModel is a loopback OpenAI-protocol server whose replies are
// scripted per agent: each agent's prompt starts "You are <agent>.", and the
// n-th request of an agent gets its n-th reply (the last one repeats).
type scriptedModel struct {
	*httptest.Server
	mu      sync.Mutex
	scripts map[string][]string
	calls   map[string]int
	log     []chatLog
}

func newScriptedModel(t *testing.T, scripts map[string][]string) *scriptedModel {
	m := &scriptedModel{scripts: scripts, calls: map[string]int{}}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil || r.URL.Path != "/chat/completions" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var msgs []map[string]string
	for _, raw := range body["messages"].([]any) {
		mm := raw.(map[string]any)
		m := map[string]string{"role": fmt.Sprint(mm["role"])}
		switch c := mm["content"].(type) {
		case string:
			m["content"] = c
		case nil:
		default:
			b, _ := json.Marshal(c)
			m["content"] = string(b)
		}
		if id, ok := mm["tool_call_id"].(string); ok {
			m["tool_call_id"] = id
		}
		if tc, ok := mm["tool_calls"]; ok {
			b, _ := json.Marshal(tc)
			m["tool_calls"] = string(b)
		}
		msgs = append(msgs, m)
	}
	agent := ""
	if len(msgs) > 1 {
		if rest, ok := strings.CutPrefix(msgs[1]["content"], "You are "); ok {
			agent, _, _ = strings.Cut(rest, ".")
		}
	}
	m.mu.Lock()
	m.log = append(m.log, chatLog{Agent: agent, Body: body, Messages: msgs})
	script := m.scripts[agent]
	n := m.calls[agent]
	m.calls[agent]++
	m.mu.Unlock()
	if len(script) == 0 {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	text := script[min(n, len(script)-1)]
	msg, finish := map[string]any{"role": "assistant", "content": text}, "stop"
	if calls, ok := strings.CutPrefix(text, toolCallsPrefix); ok {
		var cs []scriptedCall
		if err := json.Unmarshal([]byte(calls), &cs); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var tcs []any
		for _, c := range cs {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}, "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"model": body["model"], "choices": []any{map[string]any{
		"message": msg, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
}

// toolCallsPrefix marks a scripted reply that calls tools: the rest is a
// JSON array of scriptedCall.
const toolCallsPrefix = "tool_calls:"

// scriptedCall is one tool call of a scripted reply.
type scriptedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolCalls scripts a reply that makes the calls c.
func toolCalls(c ...scriptedCall) string {
	b, _ := json.Marshal(c)
	return toolCallsPrefix + string(b)
}

func (m *scriptedModel) requests(agent string) []chatLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chatLog
	for _, l := range m.log {
		if l.Agent == agent {
			out = append(out, l)
		}
	}
	return out
}

// agentOrganism starts an organism from yaml with base_url pointing at m.
func agentOrganism(t *testing.T, m *scriptedModel, yaml string) *Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	doc := fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
%s`, m.URL, yaml)
	cfg, err := config.Parse("organism.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := New(cfg, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), agentWait)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return o
}

// agentWait bounds the waits of the agent tests: generous, for a loaded
// 2-core machine under -race, where a model reply of megabytes takes its
// repair and canonical passes several seconds; a test that passes waits
// only as long as its work takes.
const agentWait = 2 * time.Minute

// ask sends text to a YAML agent from the console and returns the text of
// the reply that comes back.
func ask(t *testing.T, o *Organism, agent, text string) string {
	t.Helper()
	l, ok := o.Pump.Lookup(agent)
	if !ok {
		t.Fatalf("no listener %s", agent)
	}
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString(text)
	replies := make(chan string, 4)
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	_, err := o.Pump.Send(ctx, "console", agent, v.Interface(), pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply {
			if a, ok := e.Payload.(*llm.Answer); ok {
				replies <- a.Text
			} else if h, ok := e.Payload.(*llm.Halted); ok {
				replies <- h.Text
			} else {
				replies <- fmt.Sprintf("unexpected reply %T %v", e.Payload, e.Payload)
			}
		}
		if e.Kind == pump.EventHuh {
			replies <- "huh: " + e.Error
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-replies:
		return r
	case <-ctx.Done():
		t.Fatal("no reply")
		return ""
	}
}

const twoAgents = `listeners:
  - name: boss
    agent: true
    description: Plans and delegates
    prompt: You are boss.
    peers: [poet]
    tool_calling: xml
    max_tokens: 300
    temperature: 0.5
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
  - name: other
    agent: true
    description: Not a peer of boss
    prompt: You are other.
`

func TestYAMLAgentAnswersItsCaller(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"Rain taps the roof."}})
	o := agentOrganism(t, m, twoAgents)
	if got := ask(t, o, "poet", "write about rain"); got != "Rain taps the roof." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("poet")
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[0].Messages
	if msgs[0]["role"] != "system" || msgs[0]["content"] != llm.Constitution() {
		t.Errorf("first message is not the constitution: %v", msgs[0])
	}
	if msgs[1]["content"] != "You are poet." {
		t.Errorf("second message %v", msgs[1])
	}
	last := msgs[len(msgs)-1]
	if last["role"] != "user" || last["content"] != "[From console]\nwrite about rain" {
		t.Errorf("last message %v", last)
	}
	if reqs[0].Body["model"] != "gpt-test" {
		t.Errorf("model %v", reqs[0].Body["model"])
	}
	if u := o.LLM.AgentUsage("poet"); u.Total() != 18 || u.Requests != 1 {
		t.Errorf("usage %+v", u)
	}
}

func TestAgentCallsPeerThenAnswers(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss": {"I will ask the poet. <PoetTask><Text>a haiku about rain</Text></PoetTask>", "The poet wrote: drops"},
		"poet": {"drops"},
	})
	o := agentOrganism(t, m, twoAgents)
	if got := ask(t, o, "boss", "get me a poem"); got != "The poet wrote: drops" {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("boss")
	if len(reqs) != 2 {
		t.Fatalf("%d boss requests", len(reqs))
	}
	if reqs[0].Body["max_tokens"] != 300.0 || reqs[0].Body["temperature"] != 0.5 {
		t.Errorf("max_tokens/temperature %v/%v", reqs[0].Body["max_tokens"], reqs[0].Body["temperature"])
	}
	usage := reqs[0].Messages[2]["content"]
	if !strings.Contains(usage, "poet") || !strings.Contains(usage, "<PoetTask>") {
		t.Errorf("usage instructions do not show the peer's real element names:\n%s", usage)
	}
	second := reqs[1].Messages
	roles := []string{}
	for _, msg := range second {
		roles = append(roles, msg["role"])
	}
	if got := strings.Join(roles, ","); got != "system,system,system,user,assistant,user" {
		t.Fatalf("roles %s", got)
	}
	if !strings.Contains(second[4]["content"], "<PoetTask>") || !strings.Contains(second[5]["content"], "[From poet]") ||
		!strings.Contains(second[5]["content"], "drops") {
		t.Errorf("history %v", second[3:])
	}
}

// TestXMLAgentMarkupNamingNoPeerIsText: in XML mode only an element naming
// a peer's payload is a message; markup naming another listener's payload
// (not a peer) is text of the answer, passed on as written.
func TestXMLAgentMarkupNamingNoPeerIsText(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss": {"<OtherTask><Text>hi</Text></OtherTask>"},
	})
	o := agentOrganism(t, m, twoAgents)
	if got := ask(t, o, "boss", "talk to other"); got != "<OtherTask><Text>hi</Text></OtherTask>" {
		t.Fatalf("reply %q", got)
	}
	if n := len(m.requests("boss")); n != 1 {
		t.Fatalf("%d requests", n)
	}
	if len(m.requests("other")) != 0 {
		t.Error("the markup reached other")
	}
}

func TestAgentCorrectsInvalidPayload(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss": {"<PoetTask><Verse>x</Verse></PoetTask>", "<PoetTask><Text>x</Text></PoetTask>", "done: ok"},
		"poet": {"ok"},
	})
	o := agentOrganism(t, m, twoAgents)
	if got := ask(t, o, "boss", "go"); got != "done: ok" {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("boss")
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]
	if !strings.Contains(last, "Invalid payload structure") || !strings.Contains(last, "Verse") ||
		!strings.Contains(last, "Peers you may address: poet (payload <PoetTask>)") || strings.Contains(last, "original-attempt") {
		t.Errorf("the <huh> did not come back as actionable text: %s", last)
	}
}

func TestAgentBounds(t *testing.T) {
	tests := []struct {
		name   string
		extra  string
		boss   []string
		want   string
		calls  int
		agentY string
	}{
		{"max_iterations", "", []string{"<PoetTask><Text>1</Text></PoetTask>", "<PoetTask><Text>2</Text></PoetTask>",
			"<PoetTask><Text>3</Text></PoetTask>"}, "[boss halted: max_iterations (2) reached in this turn]", 2, "    max_iterations: 2\n"},
		{"progress guard", "", []string{"<PoetTask><Text>same</Text></PoetTask>", "<PoetTask>\n  <Text>same</Text></PoetTask>",
			"<poettask><text>SAME</text></poettask>"}, "[boss halted: no progress: the same output 3 times in a row]", 3, ""},
		{"thread budget stop", "budgets: {thread_tokens: 10}\n", []string{"<PoetTask><Text>1</Text></PoetTask>", "never"},
			"[boss halted: thread token budget exhausted (18 of 10)]", 1, ""},
		{"agent budget warn", "budgets: {agent_tokens: 10, on_exceed: warn}\n", []string{"<PoetTask><Text>1</Text></PoetTask>", "fine"},
			"fine", 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"boss": tc.boss, "poet": {"a", "b", "c", "d"}})
			yaml := strings.Replace(twoAgents, "    temperature: 0.5\n", "    temperature: 0.5\n"+tc.agentY, 1)
			o := agentOrganism(t, m, tc.extra+yaml)
			if got := ask(t, o, "boss", "go"); got != tc.want {
				t.Fatalf("reply %q, want %q", got, tc.want)
			}
			if n := len(m.requests("boss")); n != tc.calls {
				t.Errorf("%d model calls, want %d", n, tc.calls)
			}
		})
	}
}

func TestAgentConfigErrorsAtLoad(t *testing.T) {
	t.Setenv("TEST_LLM_KEY", "sk-test")
	t.Setenv("UNSET_LLM_KEY", "")
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"unknown provider", `llm: {backends: [{provider: gemini}]}`,
			[]string{"organism.yaml:1:", `unknown provider "gemini"`}},
		{"model no backend serves", `llm: {backends: [{provider: xai, api_key_env: TEST_LLM_KEY}]}
listeners:
  - name: poet
    agent: true
    description: d
    prompt: p
    model: claude-sonnet-4-5
`, []string{"organism.yaml:7:", `model "claude-sonnet-4-5" is served by no configured backend (backends: xai)`}},
		{"missing prompt block", `prompts: {style: Be brief.}
llm: {backends: [{provider: xai, api_key_env: TEST_LLM_KEY}]}
listeners:
  - name: poet
    agent: true
    description: d
    prompt: style & safety
`, []string{"organism.yaml:7:", `prompt block "safety" does not exist (prompts: style)`}},
		{"no usable backend", `llm: {backends: [{provider: xai, api_key_env: UNSET_LLM_KEY}]}
listeners:
  - name: poet
    agent: true
    description: d
    prompt: p
`, []string{"organism.yaml:3:", "agent poet has no usable LLM backend: set UNSET_LLM_KEY"}},
		{"no backend at all", `listeners:
  - name: poet
    agent: true
    description: d
    prompt: p
`, []string{"organism.yaml:2:", "agent poet needs an LLM backend"}},
		{"yaml agent without prompt", `llm: {backends: [{provider: xai, api_key_env: TEST_LLM_KEY}]}
listeners:
  - name: poet
    agent: true
    description: d
`, []string{"organism.yaml:3:", `missing required key "prompt"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("organism.yaml", []byte(tc.doc))
			if err == nil {
				var o *Organism
				o, err = New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
				if err == nil {
					_ = o.Shutdown(context.Background())
					t.Fatal("no error")
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPromptBlocksCompose(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"ok"}})
	o := agentOrganism(t, m, `prompts:
  who: You are poet.
  style: Write in haiku.
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: who & style
`)
	if got := ask(t, o, "poet", "rain"); got != "ok" {
		t.Fatalf("reply %q", got)
	}
	if got := m.requests("poet")[0].Messages[1]["content"]; got != "You are poet.\n\nWrite in haiku." {
		t.Errorf("prompt %q", got)
	}
}

// warnings collects log records at warn level and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func TestGreeterUsesRouterOrTemplate(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"a friendly greeter agent": {"  Hi there, Dan!  "}})
	for _, withKey := range []bool{true, false} {
		t.Run(fmt.Sprint("key=", withKey), func(t *testing.T) {
			key := ""
			if withKey {
				key = "sk-test"
			}
			t.Setenv("XAI_API_KEY", key)
			cfg, err := config.Load("../../organism.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg.LLM.Backends[0].BaseURL = m.URL
			w := &warnings{}
			out := &printed{ch: make(chan string, 10)}
			o, err := New(cfg, Options{Logger: slog.New(w), Env: catalogEnv(out)})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Start(); err != nil {
				t.Fatal(err)
			}
			defer o.Shutdown(context.Background())
			if (o.LLM != nil) != withKey {
				t.Fatalf("LLM = %v with key %v", o.LLM, withKey)
			}
			if !withKey && (len(w.msgs) != 1 || w.msgs[0] != "llm backend xai skipped: XAI_API_KEY is not set") {
				t.Errorf("warnings %q", w.msgs)
			}
			sendGreeting(t, o, "Dan")
			want := map[bool]string{true: "[shouter] HI THERE, DAN!", false: "[shouter] HELLO, DAN!"}[withKey]
			select {
			case line := <-out.ch:
				if line != want {
					t.Fatalf("printed %q, want %q", line, want)
				}
			case <-time.After(agentWait):
				t.Fatal("no shouted greeting")
			}
			if withKey {
				reqs := m.requests("a friendly greeter agent")
				last := reqs[len(reqs)-1].Messages
				if last[0]["content"] != llm.Constitution() || !strings.Contains(last[1]["content"], "friendly greeter") {
					t.Errorf("greeter request %v", last)
				}
			}
		})
	}
}

func catalogEnv(out *printed) catalog.Env { return catalog.Env{Print: out.print} }

func sendGreeting(t *testing.T, o *Organism, name string) {
	t.Helper()
	if _, err := o.Pump.Send(context.Background(), "console", "greeter", &hello.Greeting{Name: name},
		pump.OutletFunc(func(pump.Event) {})); err != nil {
		t.Fatal(err)
	}
}

func TestHungProviderBlocksNoOtherAgentAndShutdownCancelsIt(t *testing.T) {
	arrived, cancelled, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // the server notices a closed connection once the body is read
		close(arrived)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	quick := newScriptedModel(t, map[string][]string{"fast": {"quick answer"}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	doc := fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - {provider: openai, name: hang, api_key_env: TEST_LLM_KEY, base_url: %s, supported_models: [slow-model]}
    - {provider: openai, name: quick, api_key_env: TEST_LLM_KEY, base_url: %s, supported_models: [gpt-test]}
listeners:
  - {name: slow, agent: true, description: hangs, prompt: You are slow., model: slow-model}
  - {name: fast, agent: true, description: answers, prompt: You are fast., model: gpt-test}
`, hang.URL, quick.URL)
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
	l, _ := o.Pump.Lookup("slow")
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString("take forever")
	if _, err := o.Pump.Send(context.Background(), "console", "slow", v.Interface(), pump.OutletFunc(func(pump.Event) {})); err != nil {
		t.Fatal(err)
	}
	<-arrived
	if got := ask(t, o, "fast", "quick?"); got != "quick answer" {
		t.Fatalf("fast agent replied %q while slow hangs", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = o.Shutdown(ctx) // the drain times out: the hung request is cancelled
	select {
	case <-cancelled:
	case <-time.After(agentWait):
		t.Fatal("the hung request was not cancelled by Shutdown")
	}
}

func TestAgentUntrustedOutput(t *testing.T) {
	huge := "<PoetTask><Text>" + strings.Repeat("x", 2<<20) + "</Text></PoetTask>"
	tests := []struct {
		name  string
		boss  []string
		want  string
		calls int
		about string // what the second request must quote back
	}{
		{"huge message", []string{huge, "too long, sorry"}, "too long, sorry", 2, "[From core]"},
		{"huge message refused with its reason", []string{huge, "too long, sorry"}, "too long, sorry", 2, "Message too large"},
		{"broken markup repaired", []string{"<PoetTask><Text>a & b</Text>", "done"}, "done", 2, "[From poet]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"boss": tc.boss, "poet": {"a poem"}})
			o := agentOrganism(t, m, twoAgents)
			if got := ask(t, o, "boss", "go"); got != tc.want {
				t.Fatalf("reply %q, want %q", got, tc.want)
			}
			reqs := m.requests("boss")
			if len(reqs) != tc.calls {
				t.Fatalf("%d requests, want %d", len(reqs), tc.calls)
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]
			if !strings.Contains(last, tc.about) {
				t.Errorf("second turn got %.300q", last)
			}
		})
	}
}

func TestAgentModelFailureHaltsWithReason(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{}) // every request: HTTP 404
	o := agentOrganism(t, m, twoAgents)
	got := ask(t, o, "other", "hello")
	if !strings.HasPrefix(got, "[other halted: model call failed: ") || !strings.Contains(got, "HTTP 404") {
		t.Fatalf("reply %q", got)
	}
}

func TestAgentSelfIterationAnswersTheCaller(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss": {"Let me think. <BossTask><Text>step two</Text></BossTask>", "final answer"},
	})
	o := agentOrganism(t, m, twoAgents)
	if got := ask(t, o, "boss", "go"); got != "final answer" {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("boss")
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	// The self-call turn sees the whole session: the first message, its own
	// first reply, then the note to itself.
	var roles []string
	for _, msg := range reqs[1].Messages[2:] {
		roles = append(roles, msg["role"])
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,user" {
		t.Errorf("roles %s", got)
	}
}

// TestAgentTooManyMessages: a model reply holding more payloads than
// max_messages_per_turn sends none of them; the SystemError saying the limit
// comes back into the conversation and the model answers — quickly, even
// for 20,000 payloads.
func TestAgentTooManyMessages(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		yaml  string
		limit int
	}{
		{"20,000 over the default", 20000, "", 32},
		{"3 over max_messages_per_turn 2", 3, "    max_messages_per_turn: 2\n", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reply strings.Builder
			for i := range tc.n {
				fmt.Fprintf(&reply, "<PoetTask><Text>poem %d</Text></PoetTask>\n", i)
			}
			m := newScriptedModel(t, map[string][]string{"boss": {reply.String(), "fewer then: none"}, "poet": {"a poem"}})
			yaml := strings.Replace(twoAgents, "    temperature: 0.5\n", "    temperature: 0.5\n"+tc.yaml, 1)
			o := agentOrganism(t, m, yaml)
			t0 := time.Now()
			if got := ask(t, o, "boss", "go"); got != "fewer then: none" {
				t.Fatalf("reply %q", got)
			}
			took := time.Since(t0)
			reqs := m.requests("boss")
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]
			want := fmt.Sprintf("Too many messages in one reply: %d, but at most %d may be sent per turn", tc.n, tc.limit)
			if !strings.Contains(last, "[From system]") || !strings.Contains(last, want) {
				t.Fatalf("the second turn did not get the limit back: %.400q", last)
			}
			if n := len(m.requests("poet")); n != 0 {
				t.Fatalf("%d of the refused messages reached poet", n)
			}
			t.Logf("%d payloads refused and answered in %v", tc.n, took)
		})
	}
}
