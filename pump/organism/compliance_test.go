package organism

// The Agent OS compliance suite (shared/seeds Agent OS specification,
// "Testing Requirements"): the six compliance tests, each a scenario
// against a running organism — real agents over a loopback model, the
// real store, governance, journal — asserting what the specification
// requires of it.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/listeners/memory"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// journal returns conv's journal entries once everything is written.
func journal(t *testing.T, o *Organism, conv string) []store.Entry {
	t.Helper()
	if err := o.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	es, err := o.Store().Conversation(conv)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// decisionsIn returns the journal's decision records of entries, as
// their diagnostics text.
func decisionsIn(es []store.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Kind == store.Decision {
			out = append(out, e.Diagnostics)
		}
	}
	return out
}

// TestComplianceConstitutionalViolation: the guardian blocks prohibited
// requests. A user's request matching a deny rule is refused with the
// rule's id, reason, suggestion and severity and never reaches the model;
// a call the agent itself makes that matches the rule is refused before
// the tool sees it, and the agent is told why and carries on. Every
// refusal is journaled as a decision.
func TestComplianceConstitutionalViolation(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {
		toolCalls(scriptedCall{ID: "call_rm", Name: "run_command", Arguments: `{"Command":"rm -rf /tmp/scratch"}`}),
		"I may not delete that.",
	}})
	doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", denyDoc)
	obs := &countingObserver{}
	o := agentOrganismWith(t, m, "constitution: ["+doc+"]\n"+governed, Options{DataDir: t.TempDir(), GovernanceObserver: obs})

	// A prohibited request: refused, the model never sees it.
	c := startConversation(t, o, "researcher", "please rm -rf / now")
	r, ok := c.reply(t).Payload.(*xmlpipe.Refusal)
	if !ok || r.Status != stage.RefusalStatus || r.Reason != "Destructive shell commands are forbidden" ||
		len(r.ViolatedRules) != 1 || r.ViolatedRules[0] != "no-rm-rf" || r.Suggestion != "Delete single files instead" ||
		r.Severity != stage.SeverityHigh {
		t.Fatalf("refusal %+v", r)
	}
	if n := len(m.requests("researcher")); n != 0 {
		t.Fatalf("the model got %d requests for a prohibited message", n)
	}
	if ds := decisionsIn(journal(t, o, c.id)); len(ds) != 1 || !strings.Contains(ds[0], "deny") ||
		!strings.Contains(ds[0], "no-rm-rf") {
		t.Fatalf("decisions journaled %q", ds)
	}

	// A prohibited call by the agent: refused before run_command runs.
	c2 := startConversation(t, o, "researcher", "tidy up the scratch directory")
	if text := c2.answer(t); text != "I may not delete that." {
		t.Fatalf("answer %q", text)
	}
	res := lastToolResult(t, m, "researcher")
	if res["tool_call_id"] != "call_rm" || !strings.Contains(res["content"], "no-rm-rf") ||
		!strings.Contains(res["content"], "Destructive shell commands are forbidden") {
		t.Fatalf("the agent was told %v", res)
	}
	for _, e := range journal(t, o, c2.id) {
		if e.Kind == store.Message && strings.EqualFold(e.Listener, "run_command") && e.Direction == store.Inbound {
			t.Fatalf("run_command received the prohibited call: %s", e.Bytes)
		}
	}
	if as, _ := o.Governance().Approvals(t.Context(), ApprovalFilter{}); len(as) != 0 {
		t.Fatalf("a denied call became an approval: %+v", as)
	}
	if n := obs.count("no-rm-rf", "deny"); n != 2 {
		t.Fatalf("no-rm-rf/deny counted %d times, want 2", n)
	}
}

// TestComplianceMemoryConsent: no storage without explicit approval. Under
// consent ask a remember call waits as an approval of kind memory; nothing
// is stored while it waits, not even across a restart of the organism;
// once a human approves, it is stored with that approval as its consent.
// A denied request stores nothing, and a secret is refused outright,
// whatever the consent.
func TestComplianceMemoryConsent(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"keeper": {
		rememberCall("call_1", "Alice's favourite colour is green"), "Remembered.",
		rememberCall("call_2", "Alice's dog is called Rex"), "Not remembered.",
		rememberCall("call_3", "Alice's API key is sk-proj-4f9aXbT2qLmN8vR3sK7wZ1yU6eH0cJ5d"), "I will not keep secrets.",
	}})
	dir := t.TempDir()
	cfg := remembering + "memory: {consent: ask}\n"
	alice := pump.Principal{From: "api:alice", User: "alice"}
	o, stop := governedOrganism(t, m, cfg, Options{DataDir: dir})
	t.Cleanup(stop)
	startConversationAs(t, o, alice, "keeper", "remember my favourite colour")
	a := pendingApproval(t, o)
	if a.Kind != KindMemory || a.Agent != "keeper" || !strings.Contains(a.Payload, "favourite colour is green") {
		t.Fatalf("approval %+v", a)
	}
	if ms, _ := o.Memories(t.Context(), MemoryFilter{AllUsers: true}); len(ms) != 0 {
		t.Fatalf("stored without consent: %+v", ms)
	}

	// The request still waits after a restart, and still nothing is stored.
	stop()
	o2 := agentOrganismWith(t, m, cfg, Options{DataDir: dir})
	if got := pendingApproval(t, o2); got.ID != a.ID || got.Kind != KindMemory {
		t.Fatalf("after the restart %+v, want %+v", got, a)
	}
	if ms, _ := o2.Memories(t.Context(), MemoryFilter{AllUsers: true}); len(ms) != 0 {
		t.Fatalf("stored without consent after the restart: %+v", ms)
	}
	if _, err := o2.Governance().Decide(t.Context(), a.ID, true, "alice", "yes"); err != nil {
		t.Fatal(err)
	}
	ms := waitMemories(t, o2, MemoryFilter{User: "alice"}, 1)
	if ms[0].Content != "Alice's favourite colour is green" || ms[0].Consent != a.ID {
		t.Fatalf("memory %+v, want consent %s", ms[0], a.ID)
	}
	// The model answers in order: the first conversation's turn after the
	// stored memory takes "Remembered." before the next one asks.
	waitRequests(t, m, "keeper", 2)

	// Denied: nothing stored.
	c := startConversationAs(t, o2, alice, "keeper", "remember my dog")
	waitRequests(t, m, "keeper", 3)
	d := pendingApproval(t, o2)
	if _, err := o2.Governance().Decide(t.Context(), d.ID, false, "alice", "keep that private"); err != nil {
		t.Fatal(err)
	}
	if text := c.answer(t); text != "Not remembered." {
		t.Fatalf("answer %q", text)
	}
	if res := lastToolResult(t, m, "keeper"); !strings.Contains(res["content"], "denied by alice: keep that private") {
		t.Fatalf("the agent was told %v", res)
	}

	// A secret: refused whatever the consent, and no approval is asked.
	c = startConversationAs(t, o2, alice, "keeper", "remember my API key")
	if text := c.answer(t); text != "I will not keep secrets." {
		t.Fatalf("answer %q", text)
	}
	if res := lastToolResult(t, m, "keeper"); !strings.Contains(res["content"], "never stored") {
		t.Fatalf("the agent was told %v", res)
	}
	if as, _ := o2.Governance().Approvals(t.Context(), ApprovalFilter{Status: StatusPending}); len(as) != 0 {
		t.Fatalf("a secret became an approval: %+v", as)
	}
	if ms := waitMemories(t, o2, MemoryFilter{AllUsers: true}, 1); ms[0].Consent != a.ID {
		t.Fatalf("memories %+v", ms)
	}
}

// waitRequests waits until agent's model got n requests.
func waitRequests(t *testing.T, m *scriptedModel, agent string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(m.requests(agent)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d model requests, want %d", agent, len(m.requests(agent)), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isolated: alpha has no peers, gamma may call beta.
const isolated = `listeners:
  - name: alpha
    agent: true
    description: Works alone
    prompt: You are alpha.
  - name: beta
    agent: true
    description: Answers questions
    prompt: You are beta.
  - name: gamma
    agent: true
    description: Delegates to beta
    prompt: You are gamma.
    peers: [beta]
`

// TestComplianceAgentIsolation: agents cannot communicate directly. An
// agent is offered only its declared peers; a call to any other agent
// comes back to it as an error and the other agent's model never hears of
// it. Where a peer is declared, the message travels through the pump (the
// orchestrator), which stamps the sender itself and journals it.
func TestComplianceAgentIsolation(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"alpha": {toolCalls(scriptedCall{ID: "call_b", Name: "beta", Arguments: `{"Text":"psst"}`}), "I cannot reach beta."},
		"gamma": {toolCalls(scriptedCall{ID: "call_g", Name: "beta", Arguments: `{"Text":"what is 2+2?"}`}), "Beta says 4."},
		"beta":  {"4"},
	})
	o := agentOrganismWith(t, m, isolated, Options{DataDir: t.TempDir()})

	c := startConversation(t, o, "alpha", "ask beta something")
	if text := c.answer(t); text != "I cannot reach beta." {
		t.Fatalf("alpha answered %q", text)
	}
	reqs := m.requests("alpha")
	if tools := fmt.Sprint(reqs[0].Body["tools"]); strings.Contains(tools, "beta") || strings.Contains(tools, "gamma") {
		t.Fatalf("alpha was offered other agents: %s", tools)
	}
	if res := lastToolResult(t, m, "alpha"); res["tool_call_id"] != "call_b" || !strings.Contains(res["content"], "beta") {
		t.Fatalf("alpha was told %v", res)
	}
	if n := len(m.requests("beta")); n != 0 {
		t.Fatalf("beta's model got %d requests from an agent without it as a peer", n)
	}
	for _, e := range journal(t, o, c.id) {
		if strings.EqualFold(e.To, "beta") || strings.EqualFold(e.Listener, "beta") {
			t.Fatalf("a message from alpha's conversation reached beta: %s", e.Bytes)
		}
	}

	// A declared peer: through the pump, the sender stamped by it.
	c2 := startConversation(t, o, "gamma", "ask beta")
	if text := c2.answer(t); text != "Beta says 4." {
		t.Fatalf("gamma answered %q", text)
	}
	var via bool
	for _, e := range journal(t, o, c2.id) {
		if e.Kind == store.Message && e.From == "gamma" && e.To == "beta" {
			via = strings.Contains(string(e.Bytes), "<from>gamma</from>")
		}
	}
	if !via {
		t.Fatal("gamma's message to beta is not in the journal with the sender the pump stamped")
	}
}

// TestComplianceGracefulRefusal: clear rejection messages for invalid
// requests, and the organism carries on. A request the constitution
// forbids gets a structured refusal (status, reason, rule, suggestion,
// severity), journaled as such; a malformed request is refused with an
// error that says what is wrong (the element, what the schema expects); a
// call a human denies comes back to the agent as a refusal it can explain
// to its user. After each, the organism still answers.
func TestComplianceGracefulRefusal(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"researcher": {runDate, "I was not allowed to run date.", "Hello!"}})
	doc := writeDoc(t, t.TempDir(), "CONSTITUTION.md", denyDoc)
	o := agentOrganismWith(t, m, "constitution: ["+doc+"]\n"+governed, Options{DataDir: t.TempDir()})

	c := startConversation(t, o, "researcher", "rm -rf the logs")
	e := c.reply(t)
	if r, ok := e.Payload.(*xmlpipe.Refusal); !ok || r.Status != "refused" || r.Reason == "" || r.Severity == "" {
		t.Fatalf("reply %s %+v", e.Kind, e.Payload)
	}
	var journaled bool
	for _, je := range journal(t, o, c.id) {
		if je.Kind == store.Refusal {
			b := string(je.Bytes)
			journaled = strings.Contains(b, "<status>refused</status>") && strings.Contains(b, "<violated-rule>no-rm-rf</violated-rule>") &&
				strings.Contains(b, "<suggestion>Delete single files instead</suggestion>") && strings.Contains(b, "<severity>high</severity>")
		}
	}
	if !journaled {
		t.Fatal("the refusal is not journaled with its fields")
	}

	// A malformed request: a <huh> naming the problem.
	l, _ := o.Pump.Lookup("researcher")
	bad := stage.AppendEnvelope(nil, "api:alice", "researcher", stage.NewThreadID(),
		[]byte(fmt.Sprintf(`<%s xmlns=""><Nonsense>1</Nonsense></%[1]s>`, l.Payload.Name())))
	_, err := o.Pump.InjectAs(t.Context(), bad, pump.OutletFunc(func(pump.Event) {}), pump.Principal{From: "api:alice", User: "alice"})
	if err == nil || !strings.Contains(err.Error(), "does not match the listener schema") ||
		!strings.Contains(err.Error(), "Nonsense") || !strings.Contains(err.Error(), "Expected is ( Text )") {
		t.Fatalf("a malformed request: %v, want an error naming the element and what is expected", err)
	}

	// A human's denial: the agent hears it as a refusal and answers.
	c3 := startConversation(t, o, "researcher", "what day is it?")
	a := pendingApproval(t, o)
	if _, err := o.Governance().Decide(t.Context(), a.ID, false, "alice", "not during the audit"); err != nil {
		t.Fatal(err)
	}
	if text := c3.answer(t); text != "I was not allowed to run date." {
		t.Fatalf("answer %q", text)
	}
	if res := lastToolResult(t, m, "researcher"); !strings.Contains(res["content"], "denied by alice: not during the audit") {
		t.Fatalf("the agent was told %v", res)
	}
	if got := startConversation(t, o, "researcher", "hello").answer(t); got != "Hello!" {
		t.Fatalf("after the refusals: %q", got)
	}
}

// TestComplianceEmergencyShutdown: a human can halt all operations. A halt
// of scope all during a model call closes that request within 2 s and
// holds every listener's work, agents or not; the organism stays up, and
// resuming runs what waited.
func TestComplianceEmergencyShutdown(t *testing.T) {
	m := newHangingModel(t)
	out := &printed{ch: make(chan string, 10)}
	o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, haltOrganism, Options{Env: catalog.Env{Print: out.print}})
	c := startConversation(t, o, "thinker", "think hard")
	select {
	case <-m.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the model request never started")
	}
	t0 := time.Now()
	rep, err := o.Governance().Halt("operator", pump.HaltAll)
	if err != nil || rep.Cancelled != 1 || rep.Scope != pump.HaltAll {
		t.Fatalf("Halt: %+v %v", rep, err)
	}
	select {
	case at := <-m.closed:
		if d := at.Sub(t0); d > 2*time.Second {
			t.Fatalf("the model request was closed %v after the halt, want < 2s", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the model request was not closed within 2 s of the halt")
	}
	if scope, ok := o.Governance().Halted(); !ok || scope != "all" {
		t.Fatalf("Halted() = %q %v", scope, ok)
	}
	// Every listener is held: shouter's message waits.
	if _, err := o.Pump.Send(t.Context(), "console", "shouter", &hello.GreetingResponse{Message: "wait for me",
		OriginalSender: "response-handler"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-out.ch:
		t.Fatalf("shouter ran during a halt of everything: %q", line)
	case <-time.After(300 * time.Millisecond):
	}
	if n := m.requests(); n != 1 {
		t.Fatalf("%d model requests during the halt, want 1", n)
	}
	if !o.Governance().Resume("operator") {
		t.Fatal("Resume: no halt in force")
	}
	select {
	case line := <-out.ch:
		if line != "[shouter] WAIT FOR ME" {
			t.Fatalf("printed %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shouter's held message did not run after the resume")
	}
	if text := c.answer(t); text != "answered after the halt" {
		t.Fatalf("answer %q", text)
	}
}

// TestComplianceAuditTrail: all messages logged correctly. Every message
// delivered in a conversation — the user's request, the agent's calls to
// its peer and its tool, their answers, the final answer — is in the
// journal with its sender, addressee and canonical envelope, in order; the
// human decision about a held call is journaled with who decided; a
// memory deletion is journaled too.
func TestComplianceAuditTrail(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"researcher": {runDate, toolCalls(scriptedCall{ID: "call_keep", Name: "keeper", Arguments: `{"Text":"note the date"}`}),
			"Done."},
		"keeper": {rememberCall("call_rem", "The date was checked"), "Kept."},
	})
	o := agentOrganismWith(t, m, governed+"    peers: [keeper]\n"+strings.TrimPrefix(remembering, "listeners:\n")+
		"memory: {consent: always}\n", Options{DataDir: t.TempDir()})
	var mu sync.Mutex
	delivered := map[string]map[string]int{} // by conversation, from→to of every message delivered to a listener
	defer o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage {
			mu.Lock()
			if delivered[e.Conversation] == nil {
				delivered[e.Conversation] = map[string]int{}
			}
			delivered[e.Conversation][e.From+"→"+e.Listener]++
			mu.Unlock()
		}
	}))()
	c := startConversation(t, o, "researcher", "check the date and note it")
	a := pendingApproval(t, o)
	if _, err := o.Governance().Decide(t.Context(), a.ID, true, "auditor", "fine"); err != nil {
		t.Fatal(err)
	}
	if text := c.answer(t); text != "Done." {
		t.Fatalf("answer %q", text)
	}
	es := journal(t, o, c.id)
	journaled := map[string]int{}
	var last int64
	for _, e := range es {
		if e.Seq <= last {
			t.Fatalf("journal out of order at seq %d", e.Seq)
		}
		last = e.Seq
		if e.Kind == store.Message {
			journaled[e.From+"→"+e.To]++
			if !strings.Contains(string(e.Bytes), "<from>"+e.From+"</from>") {
				t.Errorf("seq %d: the envelope does not carry its sender %s: %s", e.Seq, e.From, e.Bytes)
			}
		}
	}
	mu.Lock()
	if len(delivered[c.id]) == 0 {
		t.Error("no delivery seen")
	}
	for link, n := range delivered[c.id] {
		if journaled[link] < n {
			t.Errorf("%s: %d delivered, %d journaled", link, n, journaled[link])
		}
	}
	mu.Unlock()
	for _, link := range []string{"console→researcher", "researcher→console", "researcher→run_command", "run_command→researcher",
		"researcher→keeper", "keeper→" + memory.ListenerName, memory.ListenerName + "→keeper", "keeper→researcher"} {
		if journaled[link] == 0 {
			t.Errorf("no journaled message %s (journaled: %v)", link, journaled)
		}
	}
	ds := strings.Join(decisionsIn(es), "\n")
	if !strings.Contains(ds, "approved by auditor") || !strings.Contains(ds, a.ID) {
		t.Errorf("the human decision is not journaled: %q", ds)
	}
	// Forgetting a memory is journaled in the memory's conversation.
	mem := waitMemories(t, o, MemoryFilter{AllUsers: true}, 1)[0]
	if _, err := o.ForgetMemory(t.Context(), mem.ID, "", true, "admin"); err != nil {
		t.Fatal(err)
	}
	if ds := strings.Join(decisionsIn(journal(t, o, mem.Conversation)), "\n"); mem.Conversation == "" ||
		!strings.Contains(ds, "memory "+mem.ID+" deleted") {
		t.Errorf("the deletion of memory %s (conversation %q) is not journaled: %q", mem.ID, mem.Conversation, ds)
	}
}
