package llm

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Calc is the payload of the unit tests' calculator peer.
type Calc struct {
	Expression string `doc:"the expression"`
	Precision  *int   `xml:",omitempty"`
}

// PoetTask is the payload of the unit tests' poet peer.
type PoetTask struct{ Text string }

func mustPT[T any](t testing.TB) *xmlpipe.PayloadType {
	t.Helper()
	pt, err := xmlpipe.PayloadTypeOf[T]()
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

// scriptModel is a Chatter answering its n-th request with replies[n] (the
// last repeats); it checks every request as the Router does and keeps it.
type scriptModel struct {
	t       testing.TB
	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

func (m *scriptModel) Chat(_ context.Context, r Request) (Reply, error) {
	if err := r.Validate(); err != nil {
		m.t.Errorf("the agent sent an invalid request: %v", err)
		return Reply{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, r)
	rep := m.replies[min(len(m.reqs)-1, len(m.replies)-1)]
	if r.OnDelta != nil && rep.Content != "" {
		r.OnDelta(Delta{Text: rep.Content})
	}
	return rep, nil
}

func (m *scriptModel) requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// fakeThreads is a Threads whose every thread's caller is console.
type fakeThreads struct{}

func (fakeThreads) Ancestors(id string) []string { return []string{id} }
func (fakeThreads) Caller(string) (string, string, error) {
	return "console", "", nil
}

// loopRig is an agent over a context buffer, with the pump's part played by
// the test: it records the slot of every message it hands the agent.
type loopRig struct {
	t     *testing.T
	cb    *registry.ContextBuffer
	model *scriptModel
	a     *Agent
	own   *xmlpipe.PayloadType
	peers []xmlpipe.Peer
}

func newLoopRig(t *testing.T, replies ...Reply) *loopRig {
	cb, err := registry.NewContextBuffer(registry.ContextConfig{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := InputType("mathbot")
	if err != nil {
		t.Fatal(err)
	}
	r := &loopRig{t: t, cb: cb, model: &scriptModel{t: t, replies: replies}, own: own,
		peers: []xmlpipe.Peer{{Name: "calc.v2", Description: "Evaluates arithmetic", Payload: mustPT[Calc](t)},
			{Name: "poet", Description: "Writes poems", Payload: mustPT[PoetTask](t)}}}
	r.a = r.agent()
	return r
}

// agent builds an agent over the rig's buffer (a fresh one is a restart).
func (r *loopRig) agent() *Agent {
	return &Agent{Name: "mathbot", Prompt: "You are mathbot.", LLM: r.model, History: r.cb, Threads: fakeThreads{},
		Lookup: func(name string) (*xmlpipe.PayloadType, bool) {
			if name == "mathbot" {
				return r.own, true
			}
			return nil, false
		}}
}

// deliver hands the agent a message as the pump would: its slot first.
func (r *loopRig) deliver(from, text, inReplyTo string) xmlpipe.Response {
	r.t.Helper()
	v, _ := stage.NewTextPayload(r.own.GoType(), text)
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: from, To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw, InReplyTo: inReplyTo}); err != nil {
		r.t.Fatal(err)
	}
	resp, err := r.a.Handle(context.Background(), v, xmlpipe.Metadata{ThreadID: "t", From: from, OwnName: "mathbot",
		InReplyTo: inReplyTo, Peers: r.peers})
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

func toolCall(id, name, args string) ToolCall { return newToolCall(id, name, []byte(args)) }

// TestNativeLoopTranslatesCalls: calls become sends to the peers behind
// the functions (dotted names mapped), with the arguments as written and
// the call ids as refs; a bad call is answered at once and nothing is sent
// for it; answers arriving out of order are bound by ref; the model is asked
// again only once all are in, with every call followed by its result.
func TestNativeLoopTranslatesCalls(t *testing.T) {
	r := newLoopRig(t,
		Reply{Content: "Computing.", ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"6*7","Precision":0}`),
			toolCall("c2", "poet", `{"Text":"rain"}`), toolCall("c3", "calc_v2", `{"Expr":"1"}`)}},
		Reply{Content: "42, and a poem."})
	resp := r.deliver("console", "what is 6*7?", "")
	sends, ok := resp.(*xmlpipe.SendsResponse)
	if !ok || len(sends.Sends) != 2 {
		t.Fatalf("response %#v", resp)
	}
	s1 := sends.Sends[0]
	enc, ok := s1.Payload.(*xmlpipe.Encoded)
	if s1.To != "calc.v2" || s1.Ref != "c1" || !ok || string(enc.XML) != `<Calc xmlns=""><Expression>6*7</Expression><Precision>0</Precision></Calc>` {
		t.Errorf("first send %+v %s", s1, enc.XML)
	}
	if s2 := sends.Sends[1]; s2.To != "poet" || s2.Ref != "c2" {
		t.Errorf("second send %+v", s2)
	}
	reqs := r.model.requests()
	if names := []string{reqs[0].Tools[0].Name, reqs[0].Tools[1].Name}; names[0] != "calc_v2" || names[1] != "poet" {
		t.Errorf("functions offered %v", names)
	}
	if !strings.Contains(reqs[0].Tools[0].Description, "calc.v2: Evaluates arithmetic") ||
		!strings.Contains(string(reqs[0].Tools[0].Parameters), `"Expression"`) {
		t.Errorf("function %+v", reqs[0].Tools[0])
	}

	if resp := r.deliver("poet", "drops", "c2"); !isAwait(resp) {
		t.Fatalf("after the first answer: %#v", resp)
	}
	if resp := r.deliver("poet", "drops again", "c2"); !isAwait(resp) { // a repeated answer is ignored
		t.Fatalf("after a repeated answer: %#v", resp)
	}
	if resp := r.deliver("calc.v2", `{"Value":"42"}`, "c1"); answerText(resp) != "42, and a poem." {
		t.Fatalf("after the last answer: %#v", resp)
	}
	reqs = r.model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	ms := reqs[1].Messages
	tail := ms[len(ms)-4:]
	if tail[0].Role != Assistant || len(tail[0].ToolCalls) != 3 || tail[1].ToolCallID != "c1" || tail[1].Content != `{"Value":"42"}` ||
		tail[2].ToolCallID != "c2" || tail[2].Content != "drops" || tail[3].ToolCallID != "c3" || !tail[3].IsError ||
		!strings.Contains(tail[3].Content, "Expr") {
		t.Errorf("second request's tail %+v", tail)
	}
}

func isAwait(r xmlpipe.Response) bool {
	_, ok := r.(*xmlpipe.AwaitResponse)
	return ok
}

// answerText is the text of an answer the agent responded with.
func answerText(r xmlpipe.Response) string {
	rr, ok := r.(*xmlpipe.RespondResponse)
	if !ok {
		return fmt.Sprintf("not a Respond: %T", r)
	}
	if t, ok := stage.PayloadText(rr.Payload); ok {
		return t
	}
	return fmt.Sprintf("%#v", rr.Payload)
}

// TestNativeLoopConcurrentAnswers: answers to parallel calls arriving at
// once are bound each to its call, and the model is asked exactly once.
func TestNativeLoopConcurrentAnswers(t *testing.T) {
	const n = 8
	calls := make([]ToolCall, n)
	for i := range calls {
		calls[i] = toolCall(fmt.Sprintf("c%d", i), "poet", fmt.Sprintf(`{"Text":"%d"}`, i))
	}
	r := newLoopRig(t, Reply{ToolCalls: calls}, Reply{Content: "done"})
	if _, ok := r.deliver("console", "go", "").(*xmlpipe.SendsResponse); !ok {
		t.Fatal("no sends")
	}
	var wg sync.WaitGroup
	answers := make(chan string, n)
	for i := range n {
		wg.Go(func() { answers <- answerText(r.deliver("poet", fmt.Sprint(i), fmt.Sprintf("c%d", i))) })
	}
	wg.Wait()
	close(answers)
	done := 0
	for a := range answers {
		if a == "done" {
			done++
		}
	}
	if done != 1 || len(r.model.requests()) != 2 {
		t.Fatalf("%d answers, %d model calls; want 1 and 2", done, len(r.model.requests()))
	}
}

// TestNativeLoopSurvivesRestart: an agent built afresh over the same
// history (a restart) binds the answer to the call made before and asks the
// model once, with the whole conversation.
func TestNativeLoopSurvivesRestart(t *testing.T) {
	r := newLoopRig(t, Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"x"}`)}}, Reply{Content: "after"})
	r.deliver("console", "go", "")
	r.a = r.agent() // restart
	if got := answerText(r.deliver("poet", "verse", "c1")); got != "after" {
		t.Fatalf("answer %q", got)
	}
	reqs := r.model.requests()
	if len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Content != "verse" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestNativeLoopMintsIDs: a reply whose calls have no ids, or ids already
// used, gets ids of its own: unique in the conversation and usable as refs.
func TestNativeLoopMintsIDs(t *testing.T) {
	r := newLoopRig(t,
		Reply{ToolCalls: []ToolCall{{ID: "dup", Name: "poet", Arguments: json.RawMessage(`{"Text":"a"}`)}}},
		Reply{ToolCalls: []ToolCall{{ID: "dup", Name: "poet", Arguments: json.RawMessage(`{"Text":"b"}`)},
			{ID: "", Name: "poet", Arguments: json.RawMessage(`{"Text":"c"}`)}}},
		Reply{Content: "ok"})
	r.deliver("console", "go", "")
	sends := r.deliver("poet", "a!", "dup").(*xmlpipe.SendsResponse).Sends
	if len(sends) != 2 || sends[0].Ref == "dup" || sends[1].Ref == "" || sends[0].Ref == sends[1].Ref ||
		stage.CheckRef(sends[0].Ref) != nil {
		t.Fatalf("refs %q %q", sends[0].Ref, sends[1].Ref)
	}
	r.deliver("poet", "b!", sends[0].Ref)
	if got := answerText(r.deliver("poet", "c!", sends[1].Ref)); got != "ok" {
		t.Fatalf("answer %q", got)
	}
}

// TestLocalTools: a local tool is offered beside the peers and answered by
// the loop without a send; one that sends instead has its message bound to
// the call; a peer whose function name a local tool holds is offered under
// another name.
func TestLocalTools(t *testing.T) {
	var got LocalCall
	r := newLoopRig(t,
		Reply{ToolCalls: []ToolCall{toolCall("l1", "remember", `{"fact":"sky is blue"}`)}},
		Reply{ToolCalls: []ToolCall{toolCall("l2", "route", `{}`)}},
		Reply{Content: "remembered and routed"})
	r.peers = append(r.peers, xmlpipe.Peer{Name: "remember", Payload: mustPT[PoetTask](t)})
	r.a.LocalTools = []LocalTool{
		{Spec: ToolSpec{Name: "remember", Description: "Keeps a fact"},
			Call: func(_ context.Context, c LocalCall) (LocalResult, error) {
				got = c
				return LocalResult{Content: "kept"}, nil
			}},
		{Spec: ToolSpec{Name: "route"}, Call: func(context.Context, LocalCall) (LocalResult, error) {
			return LocalResult{Send: xmlpipe.Send("poet", &PoetTask{Text: "routed"}).(*xmlpipe.SendResponse)}, nil
		}},
	}
	resp := r.deliver("console", "go", "")
	sends, ok := resp.(*xmlpipe.SendsResponse)
	if !ok || len(sends.Sends) != 1 || sends.Sends[0].To != "poet" || sends.Sends[0].Ref != "l2" {
		t.Fatalf("response %#v", resp)
	}
	if got.ID != "l1" || got.Thread != "t" || string(got.Arguments) != `{"fact":"sky is blue"}` {
		t.Errorf("local call %+v", got)
	}
	reqs := r.model.requests()
	var names []string
	for _, s := range reqs[0].Tools {
		names = append(names, s.Name)
	}
	if len(names) != 5 || names[0] != "remember" || names[1] != "route" || !strings.HasPrefix(names[4], "remember_") {
		t.Errorf("functions %v", names)
	}
	if res := reqs[1].Messages[len(reqs[1].Messages)-1]; res.ToolCallID != "l1" || res.Content != "kept" {
		t.Errorf("local result %+v", res)
	}
	if got := answerText(r.deliver("poet", "ok", "l2")); got != "remembered and routed" {
		t.Fatalf("answer %q", got)
	}
}

// TestAgentStreams: native mode streams all of the text (it is the
// answer, markup included); XML mode stops before an element naming a peer
// and holds a '<' back until its name is known.
func TestAgentStreams(t *testing.T) {
	tests := []struct {
		name   string
		mode   ToolCalling
		deltas []string
		shown  string
		raw    bool
	}{
		{"native answer with markup", NativeTools, []string{"In HTML ", "you write <b>", "rain</b>."}, "In HTML you write <b>rain</b>.", false},
		{"xml answer", XMLTools, []string{"Rain ", "falls", ".\nSoftly."}, "Rain falls.\nSoftly.", false},
		{"xml prose then a message", XMLTools, []string{"I will ask the poet. <Po", "etTask><Text>x</Text></PoetTask>"}, "I will ask the poet. ", true},
		{"xml markup naming no peer", XMLTools, []string{"a <b>bold</b> ", "move"}, "a <b>bold</b> move", false},
		{"xml less-than in prose", XMLTools, []string{"a < b ", "and b > a"}, "a < b and b > a", false},
		{"xml split at the bracket", XMLTools, []string{"ok <", "PoetTask/>"}, "ok ", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, Reply{Content: strings.Join(tc.deltas, "")})
			r.a.ToolCalling = tc.mode
			r.a.LLM = streamingModel{tc.deltas}
			var shown strings.Builder
			ends := 0
			r.a.OnDelta = func(agent, thread, d string, end bool) {
				if agent != "mathbot" || thread != "t" {
					t.Errorf("delta for %s on %s", agent, thread)
				}
				if end {
					ends++
				}
				shown.WriteString(d)
			}
			resp := r.deliver("console", "go", "")
			if shown.String() != tc.shown || ends != 1 {
				t.Errorf("shown %q (ends %d), want %q", shown.String(), ends, tc.shown)
			}
			if _, isRaw := resp.(*xmlpipe.RawResponse); isRaw != tc.raw {
				t.Errorf("response %T", resp)
			}
		})
	}
}

// streamingModel replies with deltas through the request's OnDelta.
type streamingModel struct{ deltas []string }

func (m streamingModel) Chat(_ context.Context, r Request) (Reply, error) {
	for _, d := range m.deltas {
		if r.OnDelta != nil {
			r.OnDelta(Delta{Text: d})
		}
	}
	return Reply{Content: strings.Join(m.deltas, ""), Usage: Usage{Requests: 1}}, nil
}

// TestToolboxNames: function names are valid for every provider, map back
// to their peers, and settle collisions the same way whatever the order of
// the peers.
func TestToolboxNames(t *testing.T) {
	pt := mustPT[PoetTask](t)
	long := strings.Repeat("very.long.name.", 6)
	peers := []xmlpipe.Peer{{Name: "weather.forecast", Payload: pt}, {Name: "weather_forecast", Payload: pt},
		{Name: "weather:forecast", Payload: pt}, {Name: "core.*", Payload: pt}, {Name: long, Payload: pt},
		{Name: "gateway.peer"}, {Name: "Poet", Payload: pt}}
	b, err := buildToolbox(peers, nil)
	if err != nil {
		t.Fatal(err)
	}
	byPeer := map[string]string{}
	for fn, bt := range b.byFunc {
		if !toolName.MatchString(fn) {
			t.Errorf("function name %q is not valid", fn)
		}
		byPeer[bt.peer.Name] = fn
	}
	if byPeer["weather_forecast"] != "weather_forecast" || byPeer["core.*"] != "core__" || len(byPeer[long]) > 64 ||
		!strings.HasPrefix(byPeer["weather.forecast"], "weather_forecast_") ||
		!strings.HasPrefix(byPeer["weather:forecast"], "weather_forecast_") || byPeer["Poet"] != "Poet" {
		t.Errorf("mapping %v", byPeer)
	}
	if dup, _ := buildToolbox(append(peers, xmlpipe.Peer{Name: "poet", Payload: pt}), nil); len(dup.specs) != len(b.specs) {
		t.Error("a peer listed twice (names compare without case) is offered twice")
	}
	if len(b.unoffered) != 1 || b.unoffered[0] != "gateway.peer" {
		t.Errorf("unoffered %v", b.unoffered)
	}
	reversed := make([]xmlpipe.Peer, len(peers))
	for i, p := range peers {
		reversed[len(peers)-1-i] = p
	}
	b2, _ := buildToolbox(reversed, nil)
	for fn, bt := range b.byFunc {
		if o := b2.byFunc[fn]; o == nil || !strings.EqualFold(o.peer.Name, bt.peer.Name) {
			t.Errorf("function %s maps to %v in one order and %v in the other", fn, bt.peer.Name, o)
		}
	}
	if _, err := buildToolbox(nil, []LocalTool{{Spec: ToolSpec{Name: "bad name"}}}); err == nil {
		t.Error("an invalid local tool name was accepted")
	}
	// A peer a local tool sends to is reached through that tool only.
	hid, err := buildToolbox([]xmlpipe.Peer{{Name: "System.Memory", Payload: pt}, {Name: "Poet", Payload: pt}},
		[]LocalTool{{Spec: ToolSpec{Name: "remember", Parameters: json.RawMessage(`{"type":"object"}`)}, Sends: []string{"system.memory"}}})
	if err != nil || hid.names() != "remember, Poet" {
		t.Errorf("functions %q (%v), want the hidden peer left out", hid.names(), err)
	}
}

// TestPeerElements: only elements naming a peer's payload are messages,
// whole (nested same-name elements, self-closing, unclosed); other markup
// is not.
func TestPeerElements(t *testing.T) {
	targets := map[string]bool{"PoetTask": true, "Calculate": true}
	tests := []struct{ text, want string }{
		{"In HTML you would write <b>rain</b>.", ""},
		{"Asking. <PoetTask><Text>x</Text></PoetTask> then <b>bold</b>", "<PoetTask><Text>x</Text></PoetTask>"},
		{"<Calculate><Expression>1</Expression></Calculate><PoetTask/>", "<Calculate><Expression>1</Expression></Calculate>\n<PoetTask/>"},
		{"<PoetTask><PoetTask>in</PoetTask></PoetTask>!", "<PoetTask><PoetTask>in</PoetTask></PoetTask>"},
		{"<PoetTask><Text>a & b</Text>", "<PoetTask><Text>a & b</Text>"},
		{"<PoetTaskX>no</PoetTaskX> <p:PoetTask xmlns:p=\"u\">ns</p:PoetTask >", "<p:PoetTask xmlns:p=\"u\">ns</p:PoetTask >"},
		{"a < b and <", ""},
	}
	for _, tc := range tests {
		if got := string(peerElements(tc.text, targets)); got != tc.want {
			t.Errorf("peerElements(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestFitWindow: history past the window goes oldest first, a calls
// message with its results, with a note; the last unit always stays.
func TestFitWindow(t *testing.T) {
	sys := []Message{{Role: System, Content: "constitution"}}
	big := strings.Repeat("x", 4000)
	hist := []Message{
		{Role: User, Content: big},
		{Role: Assistant, ToolCalls: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}}},
		{Role: Tool, ToolCallID: "a", Content: big},
		{Role: User, Content: "latest"},
	}
	msgs, omitted := fitWindow(sys, hist, nil, nil, 1024, 0)
	if omitted != 3 || len(msgs) != 3 || msgs[1].Content != "[3 earlier messages of this conversation omitted to fit the context window]" ||
		msgs[2].Content != "latest" {
		t.Fatalf("omitted %d: %+v", omitted, msgs)
	}
	if err := (Request{Messages: msgs}).Validate(); err != nil {
		t.Fatal(err)
	}
	msgs, omitted = fitWindow(sys, hist, nil, nil, 1<<20, 0)
	if omitted != 0 || len(msgs) != 5 {
		t.Fatalf("a large window trimmed %d", omitted)
	}
	msgs, omitted = fitWindow(sys, hist[:1], nil, nil, 1024, 0)
	if omitted != 0 || len(msgs) != 2 {
		t.Fatalf("the only message was dropped: %d", omitted)
	}
	msgs, _ = fitWindow(sys, hist[1:3], nil, nil, 1024, 0)
	if len(msgs) != 3 || msgs[1].Role != Assistant || msgs[2].Role != Tool {
		t.Fatalf("calls kept without their result, or dropped: %+v", msgs)
	}
	if ContextWindowOf("gpt-4o-mini") != 128000 || ContextWindowOf("openai/claude-sonnet-4-5") != 200000 ||
		ContextWindowOf("my-local-model") != DefaultContextWindow {
		t.Error("context window table")
	}
}

// TestErrorsBecomeResultsAndNotes: a <huh> about a call is that call's
// failed result, in words with the pump's detail; one about nothing in
// particular is a note; neither carries the base64 attempt.
func TestErrorsBecomeResultsAndNotes(t *testing.T) {
	r := newLoopRig(t, Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"x"}`)}}, Reply{Content: "sorry"})
	r.deliver("console", "go", "")
	de := &xmlpipe.DeliveryError{Huh: stage.NewHuh(failure.ErrHandler, []byte("<PoetTask/>")), Detail: "handler failed: poet: out of ink"}
	recordError(t, r.cb, "c1")
	resp, err := r.a.HandleError(context.Background(), de, xmlpipe.Metadata{ThreadID: "t", From: "core", InReplyTo: "c1",
		Peers: r.peers})
	if err != nil || answerText(resp) != "sorry" {
		t.Fatalf("%v %v", resp, err)
	}
	res := r.model.requests()[1].Messages
	last := res[len(res)-1]
	if last.ToolCallID != "c1" || !last.IsError || !strings.Contains(last.Content, "out of ink") ||
		strings.Contains(last.Content, "PFBvZXRUYXNrLz4") {
		t.Errorf("result %+v", last)
	}
}

// Plan is a caller's payload without a text field.
type Plan struct {
	Steps int `doc:"how many steps"`
}

// plannerThreads is a Threads whose every thread's caller is planner.
type plannerThreads struct{}

func (plannerThreads) Ancestors(id string) []string { return []string{id} }
func (plannerThreads) Caller(string) (string, string, error) {
	return "planner", "", nil
}

// TestAnswerInCallersPayload: an agent called by a listener that takes no
// text answers in that listener's payload, asked for as structured output
// and written as the model gave it.
func TestAnswerInCallersPayload(t *testing.T) {
	r := newLoopRig(t, Reply{Content: `{"Steps": 3}`})
	plan := mustPT[Plan](t)
	r.a.Threads = plannerThreads{}
	lookup := r.a.Lookup
	r.a.Lookup = func(name string) (*xmlpipe.PayloadType, bool) {
		if name == "planner" {
			return plan, true
		}
		return lookup(name)
	}
	resp, ok := r.deliver("planner", "plan it", "").(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response %#v", resp)
	}
	enc, ok := resp.Payload.(*xmlpipe.Encoded)
	if !ok || enc.Type != plan || string(enc.XML) != `<Plan xmlns=""><Steps>3</Steps></Plan>` {
		t.Fatalf("payload %#v", resp.Payload)
	}
	out := r.model.requests()[0].Output
	if out == nil || out.Name != "Plan" || !strings.Contains(string(out.Schema), `"Steps"`) {
		t.Fatalf("output schema %+v", out)
	}
}

// TestNativeCallsCappedPerTurn: calls beyond the per-reply cap are not
// sent; each is answered at once with the limit.
func TestNativeCallsCappedPerTurn(t *testing.T) {
	calls := make([]ToolCall, 5)
	for i := range calls {
		calls[i] = toolCall(fmt.Sprintf("c%d", i), "poet", `{"Text":"x"}`)
	}
	r := newLoopRig(t, Reply{ToolCalls: calls}, Reply{Content: "ok"})
	r.a.MaxCallsPerTurn = 2
	sends := r.deliver("console", "go", "").(*xmlpipe.SendsResponse).Sends
	if len(sends) != 2 || sends[0].Ref != "c0" || sends[1].Ref != "c1" {
		t.Fatalf("sends %+v", sends)
	}
	r.deliver("poet", "a", "c0")
	if got := answerText(r.deliver("poet", "b", "c1")); got != "ok" {
		t.Fatalf("answer %q", got)
	}
	ms := r.model.requests()[1].Messages
	if last := ms[len(ms)-1]; last.ToolCallID != "c4" || !last.IsError || !strings.Contains(last.Content, "at most 2 calls") {
		t.Errorf("capped call's result %+v", last)
	}
}

// TestRefusedAnswerGoesBackOnce: an answer the pump refuses comes back to
// the model once as a note; a second refusal ends the conversation instead
// of answering again, and so does a refusal of a halt's answer.
func TestRefusedAnswerGoesBackOnce(t *testing.T) {
	r := newLoopRig(t, Reply{Content: "first"}, Reply{Content: "second"})
	r.deliver("console", "go", "")
	refuse := func() xmlpipe.Response {
		de := &xmlpipe.DeliveryError{Huh: &xmlpipe.Huh{Error: failure.HuhPayload}, Detail: "Element 'X': not expected"}
		recordError(t, r.cb, "")
		resp, err := r.a.HandleError(context.Background(), de, xmlpipe.Metadata{ThreadID: "t", From: "core", Peers: r.peers})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if got := answerText(refuse()); got != "second" {
		t.Fatalf("after the first refusal: %q", got)
	}
	ms := r.model.requests()[1].Messages
	if note := ms[len(ms)-1]; note.Role != User || !strings.Contains(note.Content, "Element 'X': not expected") {
		t.Errorf("note %+v", note)
	}
	if resp := refuse(); resp != nil {
		t.Fatalf("after the second refusal: %#v", resp)
	}
	if n := len(r.model.requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}

	h := newLoopRig(t, Reply{Content: "x"})
	h.a.MaxIterations = 1
	h.deliver("console", "go", "")
	h.deliver("console", "again", "") // a new turn: its one model call is allowed
	recordErrorFrom(t, h.cb, "system", "SystemError", "")
	resp, err := h.a.HandleError(context.Background(), &xmlpipe.DeliveryError{System: stage.RoutingError()},
		xmlpipe.Metadata{ThreadID: "t", From: "system"})
	if err != nil || answerText(resp) != "[mathbot halted: max_iterations (1) reached in this turn]" {
		t.Fatalf("a note past max_iterations: %#v %v", resp, err)
	}
	recordErrorFrom(t, h.cb, "system", "SystemError", "")
	if resp, _ := h.a.HandleError(context.Background(), &xmlpipe.DeliveryError{System: stage.RoutingError()},
		xmlpipe.Metadata{ThreadID: "t", From: "system"}); resp != nil {
		t.Fatalf("the halt's refused answer was answered again: %#v", resp)
	}
}

// TestLostCallsAbandoned: calls whose answers never come (lost in a crash)
// are given up when a new message arrives after AbandonCallsAfter, so the
// conversation goes on; before that, a new message waits for them.
func TestLostCallsAbandoned(t *testing.T) {
	now := time.Now()
	r := newLoopRig(t, Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"x"}`)}}, Reply{Content: "going on"})
	cb, err := registry.NewContextBuffer(registry.ContextConfig{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r.cb = cb
	r.a = r.agent()
	r.a.AbandonCallsAfter = time.Minute
	r.deliver("console", "go", "")
	if resp := r.deliver("console", "hello?", ""); !isAwait(resp) {
		t.Fatalf("a new message before the calls are given up: %#v", resp)
	}
	now = now.Add(2 * time.Minute)
	if got := answerText(r.deliver("console", "hello??", "")); got != "going on" {
		t.Fatalf("answer %q", got)
	}
	ms := r.model.requests()[1].Messages
	var result, latest Message
	for _, m := range ms {
		if m.ToolCallID == "c1" {
			result = m
		}
	}
	latest = ms[len(ms)-1]
	if !result.IsError || !strings.Contains(result.Content, "abandoned") || latest.Content != "[From console]\nhello??" {
		t.Errorf("result %+v, latest %+v", result, latest)
	}
}

// TestNativeLoopNamelessCalls: a reply whose only tool calls had no
// function name is neither an answer nor a call: the model is told so and
// asked again, once a turn; the second time the turn halts instead of the
// caller getting an empty answer.
func TestNativeLoopNamelessCalls(t *testing.T) {
	t.Run("the model corrects itself", func(t *testing.T) {
		r := newLoopRig(t, Reply{NamelessCalls: 1}, Reply{Content: "answered"})
		if got := answerText(r.deliver("console", "go", "")); got != "answered" {
			t.Fatalf("answer %q", got)
		}
		reqs := r.model.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model calls, want 2", len(reqs))
		}
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		if last.Role != User || last.Content != namelessCallNote {
			t.Errorf("the second request ends with %+v, want the note %q", last, namelessCallNote)
		}
	})
	t.Run("twice halts", func(t *testing.T) {
		r := newLoopRig(t, Reply{NamelessCalls: 2})
		if got := answerText(r.deliver("console", "go", "")); got != "[mathbot halted: its tool calls had no function name twice]" {
			t.Fatalf("answer %q", got)
		}
		if n := len(r.model.requests()); n != 2 {
			t.Errorf("%d model calls, want 2", n)
		}
	})
}

// TestNativeLoopClipsHugeCallsInHistory: a reply whose text and call
// arguments are huge is sent in full, but the history shows the model only
// MaxHistoryText of the text and, for the arguments, a JSON object saying
// what was left out — so the next request stays small; arguments of normal
// size are shown as the model wrote them.
func TestNativeLoopClipsHugeCallsInHistory(t *testing.T) {
	hugeText := strings.Repeat("verse ", 8<<10)
	hugeArgs := `{"Text":"` + hugeText + `"}`
	r := newLoopRig(t,
		Reply{Content: hugeText, ToolCalls: []ToolCall{toolCall("c1", "poet", hugeArgs),
			toolCall("c2", "calc_v2", `{"Expression":"6*7"}`)}},
		Reply{Content: "done"})
	sends, ok := r.deliver("console", "go", "").(*xmlpipe.SendsResponse)
	if !ok || len(sends.Sends) != 2 {
		t.Fatalf("response %#v", sends)
	}
	if enc := sends.Sends[0].Payload.(*xmlpipe.Encoded); !strings.Contains(string(enc.XML), hugeText) {
		t.Fatalf("the poet was not sent the whole text (%d bytes)", len(enc.XML))
	}
	r.deliver("poet", "drops", "c1")
	if got := answerText(r.deliver("calc.v2", `{"Value":"42"}`, "c2")); got != "done" {
		t.Fatalf("answer %q", got)
	}
	reqs := r.model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var calls *Message
	for i, m := range reqs[1].Messages {
		if len(m.ToolCalls) > 0 {
			calls = &reqs[1].Messages[i]
		}
	}
	if calls == nil {
		t.Fatal("no assistant message with the calls")
	}
	if n := len(calls.Content); n > MaxHistoryText+100 || !strings.Contains(calls.Content, "more bytes cut") {
		t.Errorf("the calls' text is %d bytes, want it cut at %d with a note", n, MaxHistoryText)
	}
	var cut cutArguments
	c1 := calls.ToolCalls[0].Arguments
	if err := json.Unmarshal(c1, &cut); err != nil || len(c1) > 2*maxArgumentsStart ||
		!strings.Contains(cut.Note, fmt.Sprintf("%d bytes", len(hugeArgs))) || cut.BeganWith == "" || !strings.HasPrefix(hugeArgs, cut.BeganWith) {
		t.Errorf("the huge call's arguments in history (%d bytes): %.300s (%v)", len(c1), c1, err)
	}
	if c2 := string(calls.ToolCalls[1].Arguments); c2 != `{"Expression":"6*7"}` {
		t.Errorf("a small call's arguments in history: %s, want them as written", c2)
	}
}

// restartingModel streams first, then — as the router does when that
// attempt broke off and another follows — a Restart and then second,
// which is its reply.
type restartingModel struct{ first, second []string }

func (m restartingModel) Chat(_ context.Context, r Request) (Reply, error) {
	for _, d := range m.first {
		r.OnDelta(Delta{Text: d})
	}
	r.OnDelta(Delta{Restart: true})
	for _, d := range m.second {
		r.OnDelta(Delta{Text: d})
	}
	return Reply{Content: strings.Join(m.second, ""), Usage: Usage{Requests: 1}}, nil
}

// TestStreamRestartEndsTheVoidText: when a streamed reply broke off and
// the model is asked again, what was shown of it ends with a note (a
// stream end), and the new attempt streams from its start — never glued to
// the void text.
func TestStreamRestartEndsTheVoidText(t *testing.T) {
	type piece struct {
		Text string
		End  bool
	}
	tests := []struct {
		name          string
		mode          ToolCalling
		first, second []string
		want          []piece
	}{
		{"native", NativeTools, []string{"Hello ", "wor"}, []string{"Hello world."},
			[]piece{{"Hello ", false}, {"wor", false}, {restartNote, true}, {"Hello world.", false}, {"", true}}},
		{"native, nothing shown before", NativeTools, nil, []string{"Hello world."},
			[]piece{{"Hello world.", false}, {"", true}}},
		{"xml", XMLTools, []string{"Hello wor"}, []string{"Hello world."},
			[]piece{{"Hello wor", false}, {restartNote, true}, {"Hello world.", false}, {"", true}}},
		{"xml, a message begun before", XMLTools, []string{"I ask. <Poe"}, []string{"Fine, ", "no poem."},
			[]piece{{"I ask. ", false}, {restartNote, true}, {"Fine, ", false}, {"no poem.", false}, {"", true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t)
			r.a.ToolCalling = tc.mode
			r.a.LLM = restartingModel{tc.first, tc.second}
			var got []piece
			r.a.OnDelta = func(_, _, d string, end bool) { got = append(got, piece{d, end}) }
			if a := answerText(r.deliver("console", "go", "")); a != strings.Join(tc.second, "") {
				t.Errorf("answer %q", a)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("streamed pieces (-want +got):\n%s", diff)
			}
		})
	}
}

// toolOutcome is a tool's result in the tools' convention: Error set only
// when the call failed.
type toolOutcome struct {
	XMLName xml.Name `xml:"ToolOutcome"`
	Value   string   `xml:",omitempty"`
	Error   string   `xml:",omitempty"`
}

// TestToolErrorResultsMarked: a tool's result whose Error field is set is
// recorded as a failed call (Anthropic's is_error), one without it as a
// success; the model reads both.
func TestToolErrorResultsMarked(t *testing.T) {
	r := newLoopRig(t,
		Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"1/0"}`),
			toolCall("c2", "calc_v2", `{"Expression":"6*7"}`)}},
		Reply{Content: "One failed."})
	if resp := r.deliver("console", "compute", ""); resp == nil {
		t.Fatal("no sends")
	}
	deliver := func(ref string, v *toolOutcome) xmlpipe.Response {
		t.Helper()
		pt, err := xmlpipe.PayloadTypeOf[toolOutcome]()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := pt.AppendPayload(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: "calc.v2", To: "mathbot", PayloadType: pt.Name(),
			Payload: v, Raw: raw, InReplyTo: ref}); err != nil {
			t.Fatal(err)
		}
		resp, err := r.a.Handle(context.Background(), v, xmlpipe.Metadata{ThreadID: "t", From: "calc.v2", OwnName: "mathbot",
			InReplyTo: ref, Peers: r.peers})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	deliver("c1", &toolOutcome{Error: "math error: division by zero"})
	if got := answerText(deliver("c2", &toolOutcome{Value: "42"})); got != "One failed." {
		t.Fatalf("answer %q", got)
	}
	checkResults(t, r)
}

// TestToolErrorResultsMarkedAsText: the same, for results in the form the
// pump gives an agent — its own payload whose text is the result's JSON.
func TestToolErrorResultsMarkedAsText(t *testing.T) {
	r := newLoopRig(t,
		Reply{ToolCalls: []ToolCall{toolCall("c1", "calc_v2", `{"Expression":"1/0"}`),
			toolCall("c2", "calc_v2", `{"Expression":"6*7"}`)}},
		Reply{Content: "One failed."})
	if resp := r.deliver("console", "compute", ""); resp == nil {
		t.Fatal("no sends")
	}
	r.deliver("calc.v2", `{"Expression":"1/0","Error":"math error: division by zero"}`, "c1")
	if got := answerText(r.deliver("calc.v2", `{"Expression":"6*7","Value":"42"}`, "c2")); got != "One failed." {
		t.Fatalf("answer %q", got)
	}
	checkResults(t, r)
}

// checkResults checks the results the model got for c1 (failed: division
// by zero) and c2 (42).
func checkResults(t *testing.T, r *loopRig) {
	t.Helper()
	reqs := r.model.requests()
	ms := reqs[len(reqs)-1].Messages
	results := map[string]Message{}
	for _, m := range ms {
		if m.Role == Tool {
			results[m.ToolCallID] = m
		}
	}
	if m := results["c1"]; !m.IsError || !strings.Contains(m.Content, "division by zero") {
		t.Errorf("failed call's result %+v, want IsError with the error", m)
	}
	if m := results["c2"]; m.IsError || !strings.Contains(m.Content, "42") {
		t.Errorf("successful call's result %+v, want no IsError", m)
	}
}

func TestFailedResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"error set", &toolOutcome{Error: "no"}, true},
		{"error empty", &toolOutcome{Value: "42"}, false},
		{"value, not pointer", toolOutcome{Error: "no"}, true},
		{"nil pointer", (*toolOutcome)(nil), false},
		{"no Error field", &struct{ Text string }{"x"}, false},
		{"Error not a string", &struct{ Error int }{1}, false},
		{"optional Error set", &struct{ Value, Error *string }{nil, ptr("no")}, true},
		{"optional Error given empty", &struct{ Value, Error *string }{ptr("42"), ptr("")}, false},
		{"optional Error left out", &struct{ Value, Error *string }{ptr("42"), nil}, false},
		{"not a struct", "Error", false},
		{"nil", nil, false},
		{"agent text with an Error", textPayload(t, `{"Value":"","Error":"no"}`), true},
		{"agent text, Error empty", textPayload(t, `{"Value":"42","Error":""}`), false},
		{"agent text, no Error", textPayload(t, `{"Value":"42"}`), false},
		{"agent text, Error not a string", textPayload(t, `{"Error":{"code":1}}`), false},
		{"agent text, not JSON", textPayload(t, `Error: no`), false},
	} {
		if got := failedResult(tc.v); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// textPayload is text in an agent's own payload, as the pump delivers a
// tool's result to it.
func textPayload(t *testing.T, text string) any {
	t.Helper()
	pt, err := InputType("mathbot")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := stage.NewTextPayload(pt.GoType(), text)
	if !ok {
		t.Fatal("no text payload")
	}
	return v
}
