package organism

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// selfHaltAgents: boss (XML mode) self-iterates once and then halts at
// max_iterations on its self-iteration thread; other (XML mode) calls it.
func selfHaltAgents() string {
	yaml := strings.Replace(twoAgents, "    temperature: 0.5\n", "    temperature: 0.5\n    max_iterations: 1\n", 1)
	return strings.Replace(yaml, "    prompt: You are other.\n",
		"    prompt: You are other.\n    peers: [boss]\n    tool_calling: xml\n", 1)
}

// TestAgentHaltOnSelfThreadToldLikeAnyHalt: an XML-mode agent that halts
// on its own self-iteration thread tells a caller that is not the
// organism's own user — another agent, a callable's call — only that it
// could not finish, never why (max_iterations, a backend, a URL), and the
// caller is answered rather than left waiting; the console is told why.
func TestAgentHaltOnSelfThreadToldLikeAnyHalt(t *testing.T) {
	const selfCall = "Let me think. <BossTask><Text>step two</Text></BossTask>"
	const notWhy = "[boss could not finish: it halted]"
	t.Run("another agent", func(t *testing.T) {
		m := newScriptedModel(t, map[string][]string{
			"boss":  {selfCall, "never asked"},
			"other": {"<BossTask><Text>do it</Text></BossTask>", "other is done"},
		})
		o := agentOrganism(t, m, selfHaltAgents())
		if got := ask(t, o, "other", "hello"); got != "other is done" {
			t.Fatalf("other answered %q", got)
		}
		reqs := m.requests("other")
		if len(reqs) != 2 {
			t.Fatalf("other was asked %d times, want 2 (the second with boss's answer)", len(reqs))
		}
		last := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]
		if diff := cmp.Diff("[From boss]\n"+notWhy, last); diff != "" {
			t.Errorf("what other was told of boss (-want +got):\n%s", diff)
		}
	})
	t.Run("a callable's call", func(t *testing.T) {
		m := newScriptedModel(t, map[string][]string{"boss": {selfCall, "never asked"}})
		o := agentOrganism(t, m, selfHaltAgents())
		l, _ := o.Pump.Lookup("boss")
		v := reflect.New(l.Payload.GoType())
		v.Elem().FieldByName("Text").SetString("go")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ev, err := o.Pump.Ask(ctx, "call:mathbot", "boss", v.Interface())
		if err != nil {
			t.Fatalf("ask: %v", err)
		}
		a, ok := ev.Payload.(*llm.Answer)
		if ev.Kind != pump.EventReply || !ok {
			t.Fatalf("answer %s %#v", ev.Kind, ev.Payload)
		}
		if diff := cmp.Diff(notWhy, a.Text); diff != "" {
			t.Errorf("what the call was told (-want +got):\n%s", diff)
		}
	})
	t.Run("console", func(t *testing.T) {
		m := newScriptedModel(t, map[string][]string{"boss": {selfCall, "never asked"}})
		o := agentOrganism(t, m, selfHaltAgents())
		if got := ask(t, o, "boss", "go"); got != "[boss halted: max_iterations (1) reached in this turn]" {
			t.Fatalf("console was told %q, want the reason", got)
		}
	})
}
