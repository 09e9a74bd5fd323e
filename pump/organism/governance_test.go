package organism

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// governed is an agent "researcher" that may run date, only with a human's
// approval.
const governed = `listeners:
  - name: researcher
    agent: true
    description: Looks things up
    prompt: You are researcher.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [date]}
    approval: [run_command]
`

// runDate is the researcher's first reply: a native run_command call.
var runDate = toolCalls(scriptedCall{ID: "call_date", Name: "run_command", Arguments: `{"Command":"date"}`})

// conversation sends text to agent from the console and collects what
// comes back to it.
type conversation struct {
	id      string
	replies chan pump.Event
}

func startConversation(t *testing.T, o *Organism, agent, text string) *conversation {
	t.Helper()
	l, ok := o.Pump.Lookup(agent)
	if !ok {
		t.Fatalf("no listener %s", agent)
	}
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString(text)
	c := &conversation{replies: make(chan pump.Event, 16)}
	id, err := o.Pump.Send(t.Context(), "console", agent, v.Interface(), pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply || e.Kind == pump.EventHuh {
			c.replies <- e
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	c.id = id
	return c
}

// reply waits for the conversation's reply.
func (c *conversation) reply(t *testing.T) pump.Event {
	t.Helper()
	select {
	case e := <-c.replies:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no reply")
		return pump.Event{}
	}
}

// answer waits for the conversation's answer text.
func (c *conversation) answer(t *testing.T) string {
	t.Helper()
	e := c.reply(t)
	a, ok := e.Payload.(*llm.Answer)
	if !ok {
		t.Fatalf("reply %s %T %v", e.Kind, e.Payload, e.Payload)
	}
	return a.Text
}

// pendingApproval waits until exactly one approval is pending and returns it.
func pendingApproval(t *testing.T, o *Organism) Approval {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		as, err := o.Governance().Approvals(context.Background(), ApprovalFilter{Status: StatusPending})
		if err != nil {
			t.Fatal(err)
		}
		if len(as) == 1 {
			return as[0]
		}
		if len(as) > 1 {
			t.Fatalf("%d pending approvals", len(as))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no pending approval")
	return Approval{}
}

func TestApprovedToolCallRunsAndTheAgentAnswers(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "It ran."}})
	o := agentOrganism(t, m, governed)
	c := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o)
	if a.Kind != KindTool || a.Agent != "researcher" || a.Target != "run_command" || a.Conversation != c.id ||
		!strings.Contains(a.Payload, "<RunCommand") || a.ExpiresAt.Sub(a.CreatedAt) != time.Hour {
		t.Fatalf("approval %+v", a)
	}
	if held := o.Pump.Held(); len(held) != 1 || held[0].ID != a.ID {
		t.Fatalf("held %+v", held)
	}
	if n := len(m.requests("researcher")); n != 1 {
		t.Fatalf("%d model requests before the approval, want 1 (no tool result yet)", n)
	}
	got, err := o.Governance().Decide(t.Context(), a.ID, true, "alice", "ok")
	if err != nil || got.Status != StatusApproved || got.DecidedBy != "alice" {
		t.Fatalf("Decide: %+v %v", got, err)
	}
	if text := c.answer(t); text != "It ran." {
		t.Fatalf("answer %q", text)
	}
	reqs := m.requests("researcher")
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last["role"] != "tool" || last["tool_call_id"] != "call_date" || !strings.Contains(last["content"], `"ExitCode":0`) {
		t.Fatalf("the model saw %v, want the command's result bound to its call", last)
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, false, "bob", ""); !errors.Is(err, ErrApprovalDecided) ||
		err.Error() != "approval "+a.ID+" was approved already by alice (ok)" {
		t.Fatalf("second decision: %v", err)
	}
	if _, err := o.Governance().Decide(t.Context(), "nope", true, "bob", ""); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("unknown approval: %v", err)
	}
}

func TestDeniedToolCallComesBackAsARefusal(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "I was not allowed."}})
	o := agentOrganism(t, m, governed)
	c := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o)
	if _, err := o.Governance().Decide(t.Context(), a.ID, false, "alice", "not today"); err != nil {
		t.Fatal(err)
	}
	if text := c.answer(t); text != "I was not allowed." {
		t.Fatalf("answer %q", text)
	}
	reqs := m.requests("researcher")
	last := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]["content"]
	if !strings.Contains(last, "The call was refused") || !strings.Contains(last, "denied by alice: not today") {
		t.Fatalf("the model saw %q, want the refusal", last)
	}
	as, _ := o.Governance().Approvals(t.Context(), ApprovalFilter{})
	if len(as) != 1 || as[0].Status != StatusDenied || as[0].Reason != "not today" {
		t.Fatalf("approvals %+v", as)
	}
}

func TestApprovalTimesOut(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "Nobody answered."}})
	o := agentOrganism(t, m, governed+"    approval_timeout: 200ms\n")
	c := startConversation(t, o, "researcher", "what day is it?")
	if text := c.answer(t); text != "Nobody answered." {
		t.Fatalf("answer %q", text)
	}
	reqs := m.requests("researcher")
	last := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]["content"]
	if !strings.Contains(last, "approval timed out") {
		t.Fatalf("the model saw %q", last)
	}
	as, _ := o.Governance().Approvals(t.Context(), ApprovalFilter{Status: StatusExpired})
	if len(as) != 1 {
		t.Fatalf("expired approvals %+v", as)
	}
	// Deciding it now is told that it expired, and why — not that someone
	// decided it.
	_, err := o.Governance().Decide(t.Context(), as[0].ID, true, "alice", "")
	if !errors.Is(err, ErrApprovalDecided) || err.Error() != "approval "+as[0].ID+" expired (approval timed out)" {
		t.Fatalf("deciding an expired approval: %v", err)
	}
}

func TestKilledConversationExpiresItsApprovals(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate}})
	o := agentOrganism(t, m, governed)
	c := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o)
	if _, err := o.Pump.Kill(c.id); err != nil {
		t.Fatal(err)
	}
	got, err := o.Governance().Approval(t.Context(), a.ID)
	if err != nil || got.Status != StatusExpired || got.Reason != "conversation killed" {
		t.Fatalf("after kill: %+v %v", got, err)
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, true, "alice", ""); err == nil ||
		err.Error() != "approval "+a.ID+" expired (conversation killed)" {
		t.Fatalf("approving after the kill: %v", err)
	}
	if len(o.Pump.Held()) != 0 {
		t.Fatal("still held")
	}
}

// writeDoc writes a constitution document into dir.
func writeDoc(t *testing.T, dir, name, doc string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const denyDoc = `---
document_type: constitution
version: "1.0"
scope: all_agents
authority_level: supreme
rules:
  - id: no-rm-rf
    deny: '(?i)\brm\s+-rf\b'
    reason: Destructive shell commands are forbidden
    suggestion: Delete single files instead
    severity: high
  - id: pay
    review: '(?i)\bpay\b'
    reason: Payments are decided by a human
---
# House rules

Never destroy data.
`

func TestDenyRuleRefusesBeforeTheModelSeesIt(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {"fine"}})
	doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", denyDoc)
	obs := &countingObserver{}
	o := agentOrganismWith(t, m, "constitution: ["+doc+"]\ngovernance: {alert_after: 2, alert_window: 1m}\n"+governed,
		Options{GovernanceObserver: obs})
	var alerts []GovernanceEvent
	var mu sync.Mutex
	o.Governance().Subscribe(func(e GovernanceEvent) {
		if e.Kind == EventGuardianAlert {
			mu.Lock()
			alerts = append(alerts, e)
			mu.Unlock()
		}
	})
	for i := range 2 {
		c := startConversation(t, o, "researcher", fmt.Sprintf("please run rm -rf / (%d)", i))
		e := c.reply(t)
		r, ok := e.Payload.(*xmlpipe.Refusal)
		if !ok || r.Reason != "Destructive shell commands are forbidden" || r.ViolatedRules[0] != "no-rm-rf" ||
			r.Suggestion != "Delete single files instead" || r.Severity != "high" {
			t.Fatalf("reply %T %+v", e.Payload, e.Payload)
		}
	}
	if n := len(m.requests("researcher")); n != 0 {
		t.Fatalf("the model got %d requests, want 0", n)
	}
	mu.Lock()
	if len(alerts) != 1 || alerts[0].Alert.Sender != "console" || alerts[0].Alert.Count != 2 {
		t.Fatalf("alerts %+v", alerts)
	}
	mu.Unlock()
	if got := obs.count("no-rm-rf", "deny"); got != 2 {
		t.Fatalf("metric no-rm-rf/deny = %d", got)
	}
	// The agent's constitution text is the built-in one extended by the body.
	if got := ask(t, o, "researcher", "hello"); got != "fine" {
		t.Fatalf("answer %q", got)
	}
	first := m.requests("researcher")[0].Messages[0]["content"]
	if !strings.HasPrefix(first, llm.Constitution()) || !strings.HasSuffix(first, "# House rules\n\nNever destroy data.") {
		t.Fatalf("constitution text %q", first)
	}
}

func TestReviewRuleWaitsForAHuman(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {"Paid."}})
	doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", denyDoc)
	o := agentOrganism(t, m, "constitution: ["+doc+"]\n"+governed)
	c := startConversation(t, o, "researcher", "pay the plumber")
	a := pendingApproval(t, o)
	if a.Kind != KindReview || a.Agent != "console" || a.Target != "researcher" || len(a.Rules) != 1 || a.Rules[0] != "pay" {
		t.Fatalf("approval %+v", a)
	}
	if len(m.requests("researcher")) != 0 {
		t.Fatal("the model saw a message under review")
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if text := c.answer(t); text != "Paid." {
		t.Fatalf("answer %q", text)
	}
}

func TestBadConstitutionFailsTheLoad(t *testing.T) {
	m := newScriptedModel(t, nil)
	dir := t.TempDir()
	doc := writeDoc(t, dir, "bad.md", "---\ndocument_type: constitution\nversion: 1\nscope: nobody\nauthority_level: x\n---\n")
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf("llm: {backends: [{provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s}]}\nconstitution: [%s]\n%s", m.URL, doc, governed)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), doc+`:4: scope: no agent named "nobody"`) {
		t.Fatalf("error %v", err)
	}
}

func TestPendingApprovalSurvivesARestart(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "It ran after the restart."}})
	dir := t.TempDir()
	o, stop := governedOrganism(t, m, governed, Options{DataDir: dir})
	c := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o)
	stop()
	o2 := agentOrganismWith(t, m, governed, Options{DataDir: dir})
	got := pendingApproval(t, o2)
	if got.ID != a.ID || got.Conversation != c.id {
		t.Fatalf("after restart %+v, want %+v", got, a)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(o2.Pump.Held()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if held := o2.Pump.Held(); len(held) != 1 || held[0].ID != a.ID {
		t.Fatalf("held after restart %+v", held)
	}
	var reply = make(chan string, 1)
	cancelSub := o2.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply && e.Conversation == c.id {
			if ans, ok := e.Payload.(*llm.Answer); ok {
				reply <- ans.Text
			}
		}
	}))
	defer cancelSub()
	if _, err := o2.Governance().Decide(t.Context(), a.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case text := <-reply:
		if text != "It ran after the restart." {
			t.Fatalf("answer %q", text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer after the approval")
	}
	if as, _ := o2.Governance().Approvals(t.Context(), ApprovalFilter{}); len(as) != 1 {
		t.Fatalf("approvals after restart %+v (no duplicate wanted)", as)
	}
}

// agentOrganismWith is agentOrganism with options, shut down when the test
// ends.
func agentOrganismWith(t *testing.T, m *scriptedModel, yaml string, opts Options) *Organism {
	t.Helper()
	o, stop := governedOrganism(t, m, yaml, opts)
	t.Cleanup(stop)
	return o
}

// governedOrganism starts an organism from yaml with base_url pointing at
// m; stop shuts it down (once).
func governedOrganism(t *testing.T, m *scriptedModel, yaml string, opts Options) (*Organism, func()) {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	doc := fmt.Sprintf("organism: {name: governed}\nllm:\n  retries: 0\n  backends:\n    - provider: openai\n"+
		"      api_key_env: TEST_LLM_KEY\n      base_url: %s\n      model: gpt-test\n%s", m.URL, yaml)
	cfg, err := config.Parse("organism.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case opts.Logger != nil: // the test reads the log
	case !testing.Verbose():
		opts.Logger = slog.New(slog.DiscardHandler)
	default:
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return o, func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := o.Shutdown(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// countingObserver counts governance decisions.
type countingObserver struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingObserver) GovernanceDecision(rule, decision string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[rule+"/"+decision]++
}

func (c *countingObserver) count(rule, decision string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[rule+"/"+decision]
}

// TestRefusedAnswerReachesTheCaller: an answer a deny rule refuses — a
// tool's result, a peer agent's answer — is replaced by the refusal, which
// the calling agent gets as the result of its call, and carries on; the
// answering agent is not asked again.
func TestRefusedAnswerReachesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name, doc, listeners string
		scripts              map[string][]string
		caller, callID, rule string
	}{
		{name: "tool", doc: ruleDoc(`'"Value":"42"'`), caller: "mathbot", callID: "k1", rule: "the-rule",
			listeners: ruleKinds["tool result"].listeners, scripts: ruleKinds["tool result"].scripts},
		{name: "agent", doc: denyDoc, caller: "boss", callID: "w1", rule: "no-rm-rf",
			listeners: ruleKinds["peer answer"].listeners, scripts: ruleKinds["peer answer"].scripts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, tc.scripts)
			doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", tc.doc)
			o := agentOrganismWith(t, m, "constitution: ["+doc+"]\nlisteners:\n"+tc.listeners, Options{})
			c := startConversation(t, o, tc.caller, "go")
			if text := c.answer(t); text != "carried on" {
				t.Fatalf("answer %q", text)
			}
			reqs := m.requests(tc.caller)
			if len(reqs) != 2 {
				t.Fatalf("%d requests of %s, want 2", len(reqs), tc.caller)
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			if last["role"] != "tool" || last["tool_call_id"] != tc.callID ||
				!strings.Contains(last["content"], "The call was refused") || !strings.Contains(last["content"], tc.rule) {
				t.Fatalf("the caller's model saw %v, want the refusal as its call's result", last)
			}
			if n := len(m.requests("worker")); n > 1 {
				t.Errorf("the worker was asked %d times, want once: its refused answer is not its to retry", n)
			}
		})
	}
}

// ruleDoc is a constitution whose one deny rule, the-rule, is expr (a YAML
// scalar).
func ruleDoc(expr string) string {
	return "---\ndocument_type: constitution\nversion: \"1.0\"\nscope: all_agents\nauthority_level: supreme\nrules:\n" +
		"  - id: the-rule\n    deny: " + expr + "\n    reason: Not to be told\n---\n# Rules\n"
}

// ruleKinds are the kinds of message a rule judges, each in a
// conversation the agent caller begins with "go" and in which its call
// (callID) meets the rule: the agent's call to a tool, the tool's result,
// the agent's task to a peer agent and that peer's answer.
var ruleKinds = map[string]struct {
	listeners      string
	scripts        map[string][]string
	caller, callID string
}{
	"tool call":   mathbotCalls("calculate"),
	"tool result": mathbotCalls("calculate"),
	"peer task":   bossAndWorker,
	"peer answer": bossAndWorker,
}

// mathbotCalls is mathbot calling tool with 6*7 (call k1).
func mathbotCalls(tool string) struct {
	listeners      string
	scripts        map[string][]string
	caller, callID string
} {
	return struct {
		listeners      string
		scripts        map[string][]string
		caller, callID string
	}{caller: "mathbot", callID: "k1",
		listeners: "  - name: mathbot\n    agent: true\n    description: Computes\n    prompt: You are mathbot.\n" +
			"    tools: [" + tool + "]\n",
		scripts: map[string][]string{"mathbot": {
			toolCalls(scriptedCall{ID: "k1", Name: tool, Arguments: `{"Expression":"6*7"}`}), "carried on"}}}
}

// bossAndWorker is boss asking its peer worker to clean up (call w1), and
// worker answering that it runs rm -rf.
var bossAndWorker = struct {
	listeners      string
	scripts        map[string][]string
	caller, callID string
}{caller: "boss", callID: "w1",
	listeners: "  - name: boss\n    agent: true\n    description: Plans\n    prompt: You are boss.\n    peers: [worker]\n" +
		"  - name: worker\n    agent: true\n    description: Works\n    prompt: You are worker.\n",
	scripts: map[string][]string{
		"boss":   {toolCalls(scriptedCall{ID: "w1", Name: "worker", Arguments: `{"Text":"clean up"}`}), "carried on"},
		"worker": {"run rm -rf / now", "a second answer nobody waits for"}}}

// TestRulesMatchEveryKindOfMessage: a rule matches a message written
// against its payload's XML or its text — whatever the kind of message:
// an agent's call, a tool's result, a task to a peer agent, its answer. A
// result or answer an agent reads as text (its JSON
// form) matches rules written against the XML its sender answered as well
// as rules written against that text. Each refused message reaches the
// calling agent as its call's result.
func TestRulesMatchEveryKindOfMessage(t *testing.T) {
	for _, tc := range []struct {
		kind, form, rule string
	}{
		{"tool call", "xml", `'<Calculate><Expression>6\*7</Expression>'`},
		{"tool call", "text", `'^6\*7$'`},
		{"tool result", "xml", `'<Value>42</Value>'`},
		{"tool result", "root tag", `'<CalculateResult\b'`},
		{"tool result", "text", `'^6\*7 42$'`},
		{"tool result", "agent's text", `'"Value":"42"'`},
		{"peer task", "xml", `'<WorkerTask><Text>clean up</Text>'`},
		{"peer task", "text", `'^clean up$'`},
		{"peer answer", "xml", `'<BossTask><Text>run rm'`},
		{"peer answer", "text", `'^run rm -rf / now$'`},
	} {
		t.Run(tc.kind+"/"+tc.form, func(t *testing.T) {
			k := ruleKinds[tc.kind]
			m := newScriptedModel(t, k.scripts)
			doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", ruleDoc(tc.rule))
			o := agentOrganismWith(t, m, "constitution: ["+doc+"]\nlisteners:\n"+k.listeners, Options{})
			c := startConversation(t, o, k.caller, "go")
			if text := c.answer(t); text != "carried on" {
				t.Fatalf("answer %q", text)
			}
			reqs := m.requests(k.caller)
			if len(reqs) != 2 {
				t.Fatalf("%d requests of %s, want 2", len(reqs), k.caller)
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			if last["role"] != "tool" || last["tool_call_id"] != k.callID ||
				!strings.Contains(last["content"], "The call was refused") || !strings.Contains(last["content"], "the-rule") {
				t.Fatalf("rule %s: the caller's model saw %v, want the refusal as its call's result", tc.rule, last)
			}
		})
	}
}

// TestHeldCallsAreNotAbandonedBeforeTheirApprovalEnds: an agent whose calls
// may wait for a human (its approval list, a review rule, memory consent
// ask) gives a call without a result up on a new message only once its
// approval has timed out — never while a human may still approve it, which
// would run a call nobody reads the result of.
func TestHeldCallsAreNotAbandonedBeforeTheirApprovalEnds(t *testing.T) {
	const agent = "listeners:\n  - name: researcher\n    agent: true\n    description: Looks things up\n" +
		"    prompt: You are researcher.\n    tools: [run_command]\n    tool_config:\n      run_command: {allowed_commands: [date]}\n"
	reviewDoc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", denyDoc) // has a review rule
	const boss = "  - name: boss\n    agent: true\n    description: Delegates\n    prompt: You are boss.\n    peers: [researcher]\n"
	for _, tc := range []struct {
		name, yaml, check string
		want              time.Duration
	}{
		{name: "nothing waits for a human", yaml: agent},
		{name: "approval list", yaml: agent + "    approval: [run_command]\n", want: time.Hour + time.Minute},
		{name: "approval list, own timeout", yaml: agent + "    approval: [run_command]\n    approval_timeout: 2h\n", want: 2*time.Hour + time.Minute},
		{name: "approval list, short timeout", yaml: agent + "    approval: [run_command]\n    approval_timeout: 1m\n", want: llm.DefaultAbandonCallsAfter},
		{name: "review rule", yaml: "constitution: [" + reviewDoc + "]\n" + agent, want: time.Hour + time.Minute},
		{name: "memory consent ask", yaml: agent + "    memory: true\n", want: time.Hour + time.Minute},
		{name: "memory consent always", yaml: agent + "    memory: {consent: always}\n"},
		// A call to a peer agent waits as long as that agent's held calls,
		// plus a margin for the peer's own turn.
		{name: "peer agent's approval list", check: "boss", yaml: agent + "    approval: [run_command]\n" + boss,
			want: time.Hour + 2*time.Minute},
		{name: "peer agent holds nothing", check: "boss", yaml: agent + boss, want: 0},
		{name: "peers calling each other", check: "boss",
			yaml: agent + "    peers: [boss]\n    approval: [run_command]\n    approval_timeout: 3h\n" + boss,
			want: 3*time.Hour + 2*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := agentOrganismWith(t, newScriptedModel(t, nil), tc.yaml, Options{})
			name := cmp.Or(tc.check, "researcher")
			l, ok := o.Pump.Lookup(name)
			if !ok {
				t.Fatal("no " + name)
			}
			a, ok := l.Handler.(*llm.Agent)
			if !ok {
				t.Fatalf("handler %T", l.Handler)
			}
			if a.AbandonCallsAfter != tc.want {
				t.Errorf("calls abandoned after %v, want %v", a.AbandonCallsAfter, tc.want)
			}
		})
	}
}

// TestRulesJudgeFailures: a failed call's result — a <huh> whose detail
// carries the tool's error text — is judged by the deny rules like any
// message reaching an agent: one that matches reaches the agent as the
// refusal, without the text; one that does not is delivered as it was.
func TestRulesJudgeFailures(t *testing.T) {
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Failing", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(context.Context, *slowQuery, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, errors.New("token sk-live-XYZ rejected")
			})
		}})
	const listeners = "  - {name: failing, payload_class: test.SlowQuery, handler: test.Failing, description: Fails}\n" +
		"  - {name: waiter, agent: true, description: waits, prompt: You are waiter., peers: [failing]}\n"
	for _, tc := range []struct {
		name, rule string
		refused    bool
	}{
		{"detail matches", `'sk-live-\w+'`, true},
		{"canned text matches", `'(?i)handler failed'`, true},
		{"nothing matches", `'nothing-like-it'`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"waiter": {
				toolCalls(scriptedCall{ID: "f1", Name: "failing", Arguments: `{"Text":"x"}`}), "carried on"}})
			doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", ruleDoc(tc.rule))
			o := agentOrganismWith(t, m, "constitution: ["+doc+"]\nlisteners:\n"+listeners, Options{Catalog: cat})
			c := startConversation(t, o, "waiter", "go")
			if text := c.answer(t); text != "carried on" {
				t.Fatalf("answer %q", text)
			}
			reqs := m.requests("waiter")
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			if last["role"] != "tool" || last["tool_call_id"] != "f1" {
				t.Fatalf("last message %v, want the call's result", last)
			}
			refused := strings.Contains(last["content"], "The call was refused") && strings.Contains(last["content"], "the-rule")
			leaked := strings.Contains(last["content"], "sk-live-XYZ")
			if refused != tc.refused || leaked == tc.refused {
				t.Fatalf("the model saw %q; want refused %v", last["content"], tc.refused)
			}
		})
	}
}
