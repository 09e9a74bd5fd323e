package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// callerThreads is a thread registry whose every thread was begun by one
// caller.
type callerThreads struct{ caller string }

func (callerThreads) Ancestors(id string) []string { return []string{id} }
func (c callerThreads) Caller(string) (string, string, error) {
	return c.caller, "", nil
}

// unreachable is a model whose backend cannot be reached: its error names
// the backend's URL, which no caller but the organism's own user may read.
type unreachable struct{}

const unreachableURL = "http://127.0.0.1:1/chat/completions"

func (unreachable) Chat(context.Context, Request) (Reply, error) {
	return Reply{}, fmt.Errorf(`model "gpt-test" on backend openai: Post %q: dial tcp 127.0.0.1:1: connect: connection refused`,
		unreachableURL)
}

// TestHaltToldOnlyToOwnUser: a halted turn answers the organism's own user
// (the console, a bus session) with the reason, but fails the call of any
// other caller — a listener, an agent whose tool the agent is, a callable's
// call, a federation peer — with an error that says only that the agent
// halted (ErrTurnHalted), never the reason (a backend URL, a model name).
// The same holds when the halted handling's message is handled again (a
// restart before its answer went out).
func TestHaltToldOnlyToOwnUser(t *testing.T) {
	for _, tt := range []struct {
		name, caller string
		// told: the caller is answered with the reason.
		told bool
	}{
		{name: "console", caller: "console", told: true},
		{name: "bus session", caller: "websocket:alice", told: true},
		{name: "listener", caller: "boss"},
		{name: "callable call", caller: "call:mathbot"},
		{name: "federation peer", caller: "partner"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cb, err := registry.NewContextBuffer(registry.ContextConfig{})
			if err != nil {
				t.Fatal(err)
			}
			own, err := InputType("mathbot")
			if err != nil {
				t.Fatal(err)
			}
			boss := mustPT[PoetTask](t)
			newAgent := func() *Agent {
				return &Agent{Name: "mathbot", LLM: unreachable{}, History: cb, Threads: callerThreads{tt.caller},
					Foreign: func(c string) bool { return c == "partner" || strings.HasPrefix(c, "call:") },
					Lookup: func(name string) (*xmlpipe.PayloadType, bool) {
						switch name {
						case "mathbot":
							return own, true
						case "boss":
							return boss, true
						}
						return nil, false
					}}
			}
			v, _ := stage.NewTextPayload(own.GoType(), "go")
			raw, err := own.AppendPayload(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cb.Append(registry.Slot{ThreadID: "t", From: tt.caller, To: "mathbot", PayloadType: own.Name(),
				Payload: v, Raw: raw}); err != nil {
				t.Fatal(err)
			}
			md := xmlpipe.Metadata{ThreadID: "t", From: tt.caller, OwnName: "mathbot"}
			for _, handling := range []string{"first", "again after a restart"} {
				resp, err := newAgent().Handle(context.Background(), v, md)
				if tt.told {
					if err != nil {
						t.Fatalf("%s: error %v, want the reason as the answer", handling, err)
					}
					if got := answerText(resp); !strings.HasPrefix(got, "[mathbot halted: model call failed: ") ||
						!strings.Contains(got, unreachableURL) {
						t.Errorf("%s: answer %q, want the halt's reason", handling, got)
					}
					continue
				}
				if resp != nil {
					t.Errorf("%s: answered %#v (%q), want a failed call", handling, resp, answerText(resp))
				}
				if !errors.Is(err, ErrTurnHalted) {
					t.Fatalf("%s: error %v, want ErrTurnHalted", handling, err)
				}
				if diff := cmp.Diff("mathbot could not finish: it halted", err.Error()); diff != "" {
					t.Errorf("%s: error (-want +got):\n%s", handling, diff)
				}
			}
			var halts []string
			tc, _ := cb.Thread("t")
			for _, s := range tc.Slots() {
				if s.PayloadType == haltType {
					halts = append(halts, string(s.Raw))
				}
			}
			if len(halts) != 1 || !strings.Contains(halts[0], unreachableURL) {
				t.Errorf("recorded halts %q, want the one reason in full", halts)
			}
		})
	}
}
