package organism

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

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

// selfCall is a reply of boss that sends boss a message (self-iteration).
const selfCall = "Let me think. <BossTask><Text>step two</Text></BossTask>"

// selfHalts are the ways boss halts on its self-iteration thread after
// selfCall: at max_iterations (its model asked once), or, without that
// limit, because its backend fails on the self-iteration (asked twice; a
// reply the scripted model cannot encode is a 500).
var selfHalts = []struct {
	name, yaml string
	script     []string
	asked      int
}{
	{"max_iterations", selfHaltAgents(), []string{selfCall, "never asked"}, 1},
	{"backend fails", strings.Replace(selfHaltAgents(), "    max_iterations: 1\n", "", 1),
		[]string{selfCall, toolCallsPrefix + "not json"}, 2},
}

// leaksWhy reports whether s tells why boss halted.
func leaksWhy(s string) bool {
	return strings.Contains(s, "max_iterations") || strings.Contains(s, "127.0.0.1") || strings.Contains(s, "model call")
}

// TestAgentHaltOnSelfThreadToldLikeAnyHalt: an XML-mode agent that halts
// on its own self-iteration thread fails the call of a caller that is not
// the organism's own user — another agent, a callable's call — as a callee
// that halts without self-iterating does: a failed call (a <huh>; an
// AskError whose cause is llm.ErrTurnHalted) saying only that it could not
// finish, never why (max_iterations, a backend, a URL), and not an answer
// reading so; the console is told why.
func TestAgentHaltOnSelfThreadToldLikeAnyHalt(t *testing.T) {
	for _, h := range selfHalts {
		t.Run(h.name, func(t *testing.T) {
			t.Run("another agent", func(t *testing.T) {
				m := newScriptedModel(t, map[string][]string{
					"boss":  h.script,
					"other": {"<BossTask><Text>do it</Text></BossTask>", "other is done"},
				})
				o := agentOrganism(t, m, h.yaml)
				if got := ask(t, o, "other", "hello"); got != "other is done" {
					t.Fatalf("other answered %q", got)
				}
				reqs := m.requests("other")
				if len(reqs) != 2 {
					t.Fatalf("other was asked %d times, want 2 (the second with boss's failure)", len(reqs))
				}
				last := reqs[1].Messages[len(reqs[1].Messages)-1]["content"]
				if !strings.HasPrefix(last, "[From core] Your message was not accepted") ||
					!strings.Contains(last, "boss could not finish: it halted") || leaksWhy(last) {
					t.Errorf("other was told of boss %q: want a failed call saying only that boss halted", last)
				}
			})
			t.Run("a callable's call", func(t *testing.T) {
				m := newScriptedModel(t, map[string][]string{"boss": h.script})
				o := agentOrganism(t, m, h.yaml)
				l, _ := o.Pump.Lookup("boss")
				v := reflect.New(l.Payload.GoType())
				v.Elem().FieldByName("Text").SetString("go")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ev, err := o.Pump.Ask(ctx, callSender("mathbot"), "boss", v.Interface())
				var ae *pump.AskError
				if !errors.As(err, &ae) || !errors.Is(err, llm.ErrTurnHalted) {
					t.Fatalf("the call got %s %#v, error %v; want a failed call caused by %v", ev.Kind, ev.Payload, err,
						llm.ErrTurnHalted)
				}
				if msg := err.Error(); !strings.Contains(msg, "boss could not finish: it halted") || leaksWhy(msg) {
					t.Errorf("the failed call says %q: want only that boss halted", msg)
				}
				if n := len(m.requests("boss")); n != h.asked {
					t.Errorf("boss's model was asked %d times, want %d", n, h.asked)
				}
			})
			t.Run("console", func(t *testing.T) {
				m := newScriptedModel(t, map[string][]string{"boss": h.script})
				o := agentOrganism(t, m, h.yaml)
				if got := ask(t, o, "boss", "go"); !strings.HasPrefix(got, "[boss halted: ") || !leaksWhy(got) {
					t.Fatalf("console was told %q, want the reason", got)
				}
			})
		})
	}
}
