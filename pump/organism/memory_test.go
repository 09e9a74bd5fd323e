package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/memory"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// remembering is an agent "keeper" with memory under the organism's
// consent policy (appended by each test).
const remembering = `listeners:
  - name: keeper
    agent: true
    description: Keeps notes about its users
    prompt: You are keeper.
    memory: true
`

// rememberCall is a scripted native call of remember.
func rememberCall(id, content string) string {
	return toolCalls(scriptedCall{ID: id, Name: memory.RememberTool,
		Arguments: fmt.Sprintf(`{"Content":%q,"Tags":["prefs"]}`, content)})
}

// recallCall is a scripted native call of recall.
func recallCall(id, query string) string {
	return toolCalls(scriptedCall{ID: id, Name: memory.RecallTool, Arguments: fmt.Sprintf(`{"Query":%q}`, query)})
}

// startConversationAs sends text to agent as who on a new thread and
// collects the answers.
func startConversationAs(t *testing.T, o *Organism, who pump.Principal, agent, text string) *conversation {
	t.Helper()
	l, ok := o.Pump.Lookup(agent)
	if !ok {
		t.Fatalf("no listener %s", agent)
	}
	body := fmt.Sprintf(`<%s xmlns=""><Text>%s</Text></%[1]s>`, l.Payload.Name(), text)
	env := stage.AppendEnvelope(nil, who.From, agent, stage.NewThreadID(), []byte(body))
	c := &conversation{replies: make(chan pump.Event, 16)}
	id, err := o.Pump.InjectAs(t.Context(), env, pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply || e.Kind == pump.EventHuh {
			c.replies <- e
		}
	}), who)
	if err != nil {
		t.Fatal(err)
	}
	c.id = id
	return c
}

// lastToolResult is the content of the last message of the agent's last
// model request (the tool result it was given).
func lastToolResult(t *testing.T, m *scriptedModel, agent string) map[string]string {
	t.Helper()
	reqs := m.requests(agent)
	if len(reqs) == 0 {
		t.Fatalf("no requests of %s", agent)
	}
	msgs := reqs[len(reqs)-1].Messages
	return msgs[len(msgs)-1]
}

// waitMemories polls o's memories of user until there are n.
func waitMemories(t *testing.T, o *Organism, f MemoryFilter, n int) []Memory {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms, err := o.Memories(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == n || time.Now().After(deadline) {
			if len(ms) != n {
				t.Fatalf("%d memories, want %d: %+v", len(ms), n, ms)
			}
			return ms
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMemoryAskWaitsForAHumanThenRecalls(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"keeper": {
		rememberCall("call_rem", "Alice prefers tea to coffee"), "Noted.",
		recallCall("call_rec", "tea"), "You prefer tea.",
	}})
	o := agentOrganismWith(t, m, remembering+"memory: {consent: ask}\n", Options{DataDir: t.TempDir()})
	alice := pump.Principal{From: "api:alice", User: "alice"}
	c := startConversationAs(t, o, alice, "keeper", "remember that I prefer tea")
	a := pendingApproval(t, o)
	if a.Kind != KindMemory || a.Agent != "keeper" || a.Target != memory.ListenerName ||
		!strings.Contains(a.Payload, "Alice prefers tea to coffee") || !strings.Contains(a.RequestReason, "user alice") {
		t.Fatalf("approval %+v", a)
	}
	if n := len(m.requests("keeper")); n != 1 {
		t.Fatalf("%d model requests before the consent, want 1", n)
	}
	if ms, _ := o.Memories(t.Context(), MemoryFilter{AllUsers: true}); len(ms) != 0 {
		t.Fatalf("stored before the consent: %+v", ms)
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, true, "alice", "yes"); err != nil {
		t.Fatal(err)
	}
	if text := c.answer(t); text != "Noted." {
		t.Fatalf("answer %q", text)
	}
	res := lastToolResult(t, m, "keeper")
	if res["role"] != "tool" || res["tool_call_id"] != "call_rem" || !strings.Contains(res["content"], "approved by alice") {
		t.Fatalf("the model saw %v", res)
	}
	ms := waitMemories(t, o, MemoryFilter{User: "alice"}, 1)
	if ms[0].Content != "Alice prefers tea to coffee" || ms[0].Agent != "keeper" || ms[0].Consent != a.ID ||
		ms[0].User != "alice" || len(ms[0].Tags) != 1 || ms[0].Tags[0] != "prefs" {
		t.Fatalf("memory %+v", ms[0])
	}
	// A later conversation of alice recalls it; bob's space is empty.
	c2 := startConversationAs(t, o, alice, "keeper", "what do I drink?")
	if text := c2.answer(t); text != "You prefer tea." {
		t.Fatalf("answer %q", text)
	}
	if res := lastToolResult(t, m, "keeper"); !strings.Contains(res["content"], "Alice prefers tea to coffee") {
		t.Fatalf("recall gave %v", res)
	}
	if ms, _ := o.Memories(t.Context(), MemoryFilter{User: "bob"}); len(ms) != 0 {
		t.Fatalf("bob sees %+v", ms)
	}
}

func TestMemoryDeniedConsentStoresNothing(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"keeper": {rememberCall("call_rem", "Bob's cat is Tom"), "Not kept."}})
	o := agentOrganism(t, m, remembering)
	c := startConversation(t, o, "keeper", "remember my cat")
	a := pendingApproval(t, o)
	if a.Kind != KindMemory {
		t.Fatalf("approval %+v", a)
	}
	if _, err := o.Governance().Decide(t.Context(), a.ID, false, "carol", "no thanks"); err != nil {
		t.Fatal(err)
	}
	if text := c.answer(t); text != "Not kept." {
		t.Fatalf("answer %q", text)
	}
	if res := lastToolResult(t, m, "keeper"); !strings.Contains(res["content"], "denied by carol: no thanks") {
		t.Fatalf("the model saw %v", res)
	}
	if ms, err := o.Memories(t.Context(), MemoryFilter{AllUsers: true}); err != nil || len(ms) != 0 {
		t.Fatalf("memories %+v %v", ms, err)
	}
}

func TestMemoryPolicies(t *testing.T) {
	for _, tc := range []struct {
		name, policy, content string
		stored                bool
		saw                   string
	}{
		{"always stores at once", "always", "The user likes jazz", true, memory.PolicyAlways},
		{"never stores nothing", "never", "The user likes jazz", false, "policy is never"},
		{"a password is refused under always", "always", "my password is hunter2-Secret!", false, "never stored"},
		{"a private key is refused under ask", "ask", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", false, "never stored"},
		{"a card number is refused under always", "always", "card 4111 1111 1111 1111 exp 12/29", false, "never stored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"keeper": {rememberCall("call_rem", tc.content), "Done."}})
			o := agentOrganism(t, m, remembering+"memory: {consent: "+tc.policy+"}\n")
			c := startConversation(t, o, "keeper", "remember this")
			if text := c.answer(t); text != "Done." {
				t.Fatalf("answer %q", text)
			}
			if res := lastToolResult(t, m, "keeper"); !strings.Contains(res["content"], tc.saw) {
				t.Fatalf("the model saw %v, want %q", res, tc.saw)
			}
			want := 0
			if tc.stored {
				want = 1
			}
			ms := waitMemories(t, o, MemoryFilter{AllUsers: true}, want)
			if tc.stored && (ms[0].Content != tc.content || ms[0].Consent != memory.PolicyAlways) {
				t.Fatalf("memory %+v", ms[0])
			}
			if as, _ := o.Governance().Approvals(t.Context(), ApprovalFilter{}); len(as) != 0 {
				t.Fatalf("approvals %+v", as)
			}
		})
	}
}

// TestMemoryGateRefusesForgedRemember: a Remember message sent to the
// memory listener by anyone but an agent with memory is refused by the
// gate, whatever it holds; nothing is stored.
func TestMemoryGateRefusesForgedRemember(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"keeper": {"hi"}})
	o := agentOrganism(t, m, remembering+"memory: {consent: always}\n")
	who := pump.Principal{From: "api:mallory", User: "mallory"}
	env := stage.AppendEnvelope(nil, who.From, memory.ListenerName, stage.NewThreadID(),
		[]byte(`<Remember xmlns=""><Content>planted memory</Content></Remember>`))
	c := make(collector, 16)
	_, err := o.Pump.InjectAs(t.Context(), env, c, who)
	if err == nil {
		e := c.await(t, pump.EventReply, pump.EventHuh)
		if e.Kind == pump.EventReply {
			if _, ok := e.Payload.(*memory.Remembered); ok {
				t.Fatalf("a forged Remember was stored: %+v", e.Payload)
			}
		}
	}
	if ms, _ := o.Memories(t.Context(), MemoryFilter{AllUsers: true}); len(ms) != 0 {
		t.Fatalf("memories %+v", ms)
	}
}

func TestForgetMemoryOnlyByItsUser(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"keeper": {rememberCall("call_rem", "Alice lives in Lyon"), "Noted."}})
	o := agentOrganism(t, m, remembering+"memory: {consent: always}\n")
	alice := pump.Principal{From: "api:alice", User: "alice"}
	if text := startConversationAs(t, o, alice, "keeper", "remember where I live").answer(t); text != "Noted." {
		t.Fatalf("answer %q", text)
	}
	mem := waitMemories(t, o, MemoryFilter{User: "alice"}, 1)[0]
	if _, err := o.ForgetMemory(context.Background(), mem.ID, "bob", false, "api:bob"); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("bob forgetting alice's memory: %v", err)
	}
	if _, err := o.ForgetMemory(context.Background(), "0000", "alice", false, "api:alice"); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	got, err := o.ForgetMemory(context.Background(), mem.ID, "alice", false, "api:alice")
	if err != nil || got.ID != mem.ID {
		t.Fatalf("forget: %+v %v", got, err)
	}
	waitMemories(t, o, MemoryFilter{AllUsers: true}, 0)
	if _, err := o.ForgetMemory(context.Background(), mem.ID, "alice", false, "api:alice"); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("forgetting twice: %v", err)
	}
}

// TestMemoryReload: a reload's consent policy applies to the next remember
// at once; giving an agent memory in an organism that started without any
// is refused with the key's position (it needs a restart).
func TestMemoryReload(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"keeper": {rememberCall("call_rem", "Likes rain"), "Kept."}})
	dir := t.TempDir()
	o := reloadOrganism(t, dir, reloadHead(m.URL)+"memory: {consent: ask}\n"+remembering)
	if _, err := o.Reload(parseIn(t, dir, reloadHead(m.URL)+"memory: {consent: always}\n"+remembering)); err != nil {
		t.Fatal(err)
	}
	if text := startConversation(t, o, "keeper", "remember I like rain").answer(t); text != "Kept." {
		t.Fatalf("answer %q", text)
	}
	if ms := waitMemories(t, o, MemoryFilter{AllUsers: true}, 1); ms[0].Consent != memory.PolicyAlways {
		t.Fatalf("memory %+v", ms[0])
	}

	plain := strings.Replace(remembering, "    memory: true\n", "", 1)
	o2 := reloadOrganism(t, t.TempDir(), reloadHead(m.URL)+plain)
	_, err := o2.Reload(parseIn(t, dir, reloadHead(m.URL)+remembering))
	if err == nil || !strings.Contains(err.Error(), "organism.yaml:14: listener keeper: memory") ||
		!strings.Contains(err.Error(), "next start") {
		t.Fatalf("reload giving memory: %v", err)
	}
}
