package organism

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// wireMessage is a chat-completions message as the OpenAI wire shape has
// it.
type wireMessage struct {
	Role      string `json:"role"`
	Content   any    `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

func (m wireMessage) text() string {
	if s, ok := m.Content.(string); ok {
		return s
	}
	return ""
}

// archivistModel is a loopback OpenAI-style server playing two models:
// gpt-mini, the librarian's, writes fold summaries (which never hold the
// vault code); gpt-test, the agent's, remembers only by unfolding — asked
// about the vault code it calls context_unfold on the id of a folded note
// and reads on page by page until a result holds the code — and asked to
// multiply calls route.
type archivistModel struct {
	*httptest.Server
	mu        sync.Mutex
	agent     [][]wireMessage // the agent's requests
	tools     [][]string      // the functions each offered
	summaries int
	problems  []string
}

var (
	vaultFact   = regexp.MustCompile(`vault code is ([A-Z]+-[A-Z]+)`)
	readOn      = regexp.MustCompile(`\{"id":"s\d+","offset":\d+\}`)
	foldedNote  = regexp.MustCompile(`context_unfold\("(s\d+)"\)`)
	routeAnswer = regexp.MustCompile(`42`)
)

func newArchivistModel(t *testing.T) *archivistModel {
	m := &archivistModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *archivistModel) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body struct {
		Model    string        `json:"model"`
		Messages []wireMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if r.URL.Path != "/chat/completions" || json.Unmarshal(b, &body) != nil || len(body.Messages) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var msg map[string]any
	m.mu.Lock()
	if body.Model == "gpt-mini" {
		m.summaries++
		msg = map[string]any{"role": "assistant", "content": "Field notes from a coastal trip: river walks, herons, calm water."}
	} else {
		m.agent = append(m.agent, body.Messages)
		var names []string
		for _, t := range body.Tools {
			names = append(names, t.Function.Name)
		}
		m.tools = append(m.tools, names)
		msg = m.agentReply(body.Messages)
	}
	m.mu.Unlock()
	finish := "stop"
	if msg["tool_calls"] != nil {
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"model": body.Model, "choices": []any{map[string]any{
		"message": msg, "finish_reason": finish}}, "usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
}

func toolCallMsg(id, name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id,
		"type": "function", "function": map[string]any{"name": name, "arguments": args}}}}
}

func sayMsg(s string) map[string]any { return map[string]any{"role": "assistant", "content": s} }

// agentReply is gpt-test's answer (m.mu held).
func (m *archivistModel) agentReply(msgs []wireMessage) map[string]any {
	n := len(m.agent)
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		for i := len(msgs) - 1; i >= 0 && msgs[i].Role == "tool"; i-- {
			t := msgs[i].text()
			if strings.HasPrefix(msgs[i].ToolCallID, "route") {
				return sayMsg("Routed: " + t)
			}
			if f := vaultFact.FindStringSubmatch(t); f != nil {
				return sayMsg("The vault code is " + f[1] + ".")
			}
			if more := readOn.FindString(t); more != "" {
				return toolCallMsg(fmt.Sprintf("more%d", n), llmUnfold, more)
			}
		}
		return sayMsg("I could not find it.")
	}
	q := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			q = msgs[i].text()
			break
		}
	}
	switch {
	case strings.Contains(q, "multiply six by seven"):
		return toolCallMsg(fmt.Sprintf("route%d", n), "route", `{"need":"multiply six by seven"}`)
	case strings.Contains(q, "read the notes file"):
		return toolCallMsg(fmt.Sprintf("route%d", n), "route", `{"need":"read the notes file"}`)
	case strings.Contains(q, "What is the vault code"):
		for _, mm := range msgs {
			if id := foldedNote.FindStringSubmatch(mm.text()); id != nil && strings.Contains(mm.text(), "folded —") {
				return toolCallMsg("unfold-"+id[1], llmUnfold, fmt.Sprintf(`{"id":%q}`, id[1]))
			}
		}
		return sayMsg("I do not know.")
	}
	return sayMsg(fmt.Sprintf("Noted (%d).", n))
}

// llmUnfold is the context_unfold function's name.
const llmUnfold = "context_unfold"

// vaultNotes is a long message whose one fact sits deep inside.
func vaultNotes() string {
	var b strings.Builder
	b.WriteString("Here are my field notes from the trip to the coast.\n")
	for range 40 {
		b.WriteString("We walked along the river and watched the herons fish in the shallows.\n")
	}
	b.WriteString("The vault code is KESTREL-ALPHA and nobody else knows it.\n")
	for range 8 {
		b.WriteString("The evening light on the water was lovely and calm.\n")
	}
	return b.String()
}

// TestAgentLibrarianFoldsAndUnfolds: a YAML agent with librarian: and a
// small context window, against a loopback OpenAI-style server, in a long
// conversation: its early long message is folded (a model summary from the
// librarian's model stands in for it, recorded in the registry), every
// request fits the window, and asked about a fact deep in that message the
// agent answers by calling context_unfold — page by page. The folded
// segment's slots still hold the original bytes. The same agent's route
// tool finds calculate among what it may address, and its answer comes
// back as the call's result.
func TestAgentLibrarianFoldsAndUnfolds(t *testing.T) {
	m := newArchivistModel(t)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	o := startOrganism(t, fmt.Sprintf(`organism: {name: archive}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - name: archivist
    agent: true
    description: Keeps notes and answers questions about them
    prompt: You are archivist.
    context_window: 2048
    tools: [calculate]
    route: true
    librarian: {model: gpt-mini, fold_below: 0.08, unfold_above: 0.2, keep_recent: 1, min_fold_tokens: 64}
`, m.URL))
	var (
		mu      sync.Mutex
		session string
	)
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "archivist" && e.From == "console" {
			mu.Lock()
			session = e.Thread
			mu.Unlock()
		}
	}))
	defer stop()
	thread := stage.NewThreadID()
	ask := func(text string) string { t.Helper(); return askAgent(t, o, "archivist", thread, text) }
	notes := vaultNotes()
	ask(notes)
	for _, s := range []string{"What a nice day it was today.", "Tomorrow we sail to the island at dawn.",
		"Remind me to buy bread and milk.", "The neighbours are painting their fence green.",
		"My sister calls on Sundays.", "The train was late again this morning."} {
		ask(s)
	}
	mu.Lock()
	sess := session
	mu.Unlock()
	tc, ok := o.ThreadContext(sess)
	if !ok {
		t.Fatalf("no context history for the agent's thread %q", sess)
	}
	first := tc.Segments()[0]
	if first.Tier == registry.TierExpanded || first.Summary == "" {
		t.Fatalf("the long message is not folded: %+v", first)
	}
	if first.SummaryBy != "gpt-mini" || strings.Contains(first.Summary, "KESTREL") {
		t.Errorf("summary %q by %q", first.Summary, first.SummaryBy)
	}
	if raw := tc.SegmentSlots(first); len(raw) == 0 || !strings.Contains(string(raw[0].Raw), "KESTREL-ALPHA") {
		t.Fatalf("the folded segment's slots lost the original: %+v", raw)
	}

	m.mu.Lock()
	asked := len(m.agent)
	m.mu.Unlock()
	if got := ask("What is the vault code from my notes?"); got != "The vault code is KESTREL-ALPHA." {
		t.Fatalf("answer %q", got)
	}
	if got := ask("Please multiply six by seven for me."); !strings.HasPrefix(got, "Routed: ") || !routeAnswer.MatchString(got) {
		t.Errorf("route answer %q", got)
	} else {
		t.Log(got)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.problems {
		t.Error(p)
	}
	if m.summaries == 0 {
		t.Error("the librarian's model wrote no summary")
	}
	if strings.Contains(fmt.Sprint(m.agent[asked]), "KESTREL") {
		t.Error("the fact was in the context before the model unfolded it")
	}
	pages := 0
	for _, req := range m.agent[asked:] {
		if last := req[len(req)-1]; last.Role == "tool" && strings.HasPrefix(last.text(), "Part s") {
			pages++
		}
	}
	if pages < 2 {
		t.Errorf("%d pages read by unfolding, want at least 2", pages)
	}
	for i, names := range m.tools {
		if !strings.Contains(strings.Join(names, ","), "context_unfold") || !strings.Contains(strings.Join(names, ","), "route") {
			t.Fatalf("request %d offers %v, want context_unfold and route", i, names)
		}
	}
	// Every request fits the window (2048 tokens less the completion's
	// reserve of 512), estimated as the agent does: about 4 bytes a token.
	for i, req := range m.agent {
		b, _ := json.Marshal(req)
		if len(b)/4 > 2048 {
			t.Errorf("request %d is %d bytes: more than the window", i, len(b))
		}
	}
}

// askAgent sends text to a YAML agent from the console on thread and
// returns the text of its answer.
func askAgent(t *testing.T, o *Organism, agent, thread, text string) string {
	t.Helper()
	var body bytes.Buffer
	body.WriteString(`<` + llm.InputTag(agent) + ` xmlns=""><Text>`)
	_ = xml.EscapeText(&body, []byte(text))
	body.WriteString(`</Text></` + llm.InputTag(agent) + `>`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &routeWaiter{done: make(chan struct{})}
	if _, err := o.Pump.InjectWait(ctx, stage.AppendEnvelope(nil, "console", agent, thread, body.Bytes()), w); err != nil {
		t.Fatalf("inject: %v", err)
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		t.Fatalf("no answer to %.40q", text)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failure != nil {
		t.Fatalf("%.40q: %v", text, &pump.AskError{Event: *w.failure})
	}
	var v struct{ Text string }
	if err := xml.Unmarshal(w.reply, &v); err != nil {
		t.Fatalf("answer %q: %v", w.reply, err)
	}
	return v.Text
}

// TestRouteToolRefuses: an agent whose route tool finds nothing it may
// address — calculate exists, but is not among its peers and tools — gets
// the refusal "no matching capability in your profile" as a failed call,
// and calculate is never called (the router is advisory: the mask comes
// first). A need the filler cannot build a payload from gets the ranked
// matches instead, and nothing is sent.
func TestRouteToolRefuses(t *testing.T) {
	m := newArchivistModel(t)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	o := startOrganism(t, fmt.Sprintf(`organism: {name: archive}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - name: loner
    agent: true
    description: Has no peers
    prompt: You are loner.
    route: true
  - name: mathbot
    agent: true
    description: Does arithmetic
    prompt: You are mathbot.
    tools: [calculate]
  - name: reader
    agent: true
    description: Reads files
    prompt: You are reader.
    tools: [files]
    route: true
`, m.URL))
	var calls atomic.Int32
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && (e.Listener == "calculate" || e.Listener == "files") {
			calls.Add(1)
		}
	}))
	defer stop()
	if got := askAgent(t, o, "loner", stage.NewThreadID(), "Please multiply six by seven."); got != "Routed: Error: no matching capability in your profile" { // a failed call reads "Error: …" to an openai model
		t.Fatalf("answer %q", got)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("calculate was called %d times", n)
	}
	// A need whose payload cannot be filled (no path in it) leaves the
	// ranked matches the agent may call as the result; nothing is sent.
	got := askAgent(t, o, "reader", stage.NewThreadID(), "Please read the notes file.")
	if !strings.HasPrefix(got, "Routed: The request for files could not be filled in from your words") ||
		!strings.Contains(got, "\n- files (score ") || strings.Contains(got, "calculate") {
		t.Errorf("answer %q", got)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("files was called %d times", n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if got := m.tools[0]; strings.Join(got, ",") != "route" {
		t.Errorf("loner is offered %v, want route alone (no context_unfold without a librarian)", got)
	}
}

// TestRouteToolStaysInTheProfile: an agent whose own profile does not
// reach calculate is never offered it by route, though calculate is its
// tool and the best match: the route is refused and nothing is sent.
func TestRouteToolStaysInTheProfile(t *testing.T) {
	m := newArchivistModel(t)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	o := startOrganism(t, fmt.Sprintf(`organism: {name: archive}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
profiles:
  talk: {listeners: [mathbot]}
listeners:
  - name: mathbot
    agent: true
    description: Does arithmetic
    prompt: You are mathbot.
    tools: [calculate]
    route: true
    profile: talk
`, m.URL))
	var calls atomic.Int32
	stop := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "calculate" {
			calls.Add(1)
		}
	}))
	defer stop()
	if got := askAgent(t, o, "mathbot", stage.NewThreadID(), "Please multiply six by seven."); got != "Routed: Error: no matching capability in your profile" { // a failed call reads "Error: …" to an openai model
		t.Fatalf("answer %q", got)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("calculate was called %d times", n)
	}
}

// TestContextTiersSurviveRestart: a durable organism's folded segments —
// tier and model summary — are restored with the slots after a restart,
// and the conversation goes on: the fact in the folded message is still
// found by unfolding it.
func TestContextTiersSurviveRestart(t *testing.T) {
	m := newArchivistModel(t)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: archive}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - name: archivist
    agent: true
    description: Keeps notes and answers questions about them
    prompt: You are archivist.
    context_window: 2048
    librarian: {model: gpt-mini, keep_recent: 1}
`, m.URL)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func() *Organism {
		t.Helper()
		o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := start()
	thread := stage.NewThreadID()
	askAgent(t, o, "archivist", thread, vaultNotes())
	for _, s := range []string{"Tomorrow we sail to the island at dawn.", "Remind me to buy bread and milk.",
		"My sister calls on Sundays."} {
		askAgent(t, o, "archivist", thread, s)
	}
	tc, ok := o.ThreadContext(thread)
	if !ok {
		t.Fatal("no context history")
	}
	before := tc.Segments()[0]
	if before.Tier != registry.TierFolded || before.SummaryBy != "gpt-mini" {
		t.Fatalf("not folded by the librarian's model: %+v", before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	o = start()
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	tc, ok = o.ThreadContext(thread)
	if !ok {
		t.Fatal("no context history after the restart")
	}
	after := tc.Segments()[0]
	if after.Tier != before.Tier || after.Summary != before.Summary || after.SummaryBy != before.SummaryBy ||
		!slices.Equal(after.Slots, before.Slots) || !after.Changed.Equal(before.Changed) {
		t.Fatalf("restored %+v, want %+v", after, before)
	}
	if got := askAgent(t, o, "archivist", thread, "What is the vault code from my notes?"); got != "The vault code is KESTREL-ALPHA." {
		t.Fatalf("answer after the restart %q", got)
	}
}
