package llm

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// sendTool is a local tool that answers its call with a message to the
// poet (as the route tool and the memory tools do): encoded sends an
// *xmlpipe.Encoded payload (the route tool's filled request), else a Go
// value of the poet's payload type. It counts its runs.
type sendTool struct {
	name    string
	encoded bool
	poet    *xmlpipe.PayloadType
	mu      sync.Mutex
	runs    int
}

func (s *sendTool) tool() LocalTool {
	return LocalTool{Spec: ToolSpec{Name: s.name, Description: "Finds who does it and asks."},
		Call: func(context.Context, LocalCall) (LocalResult, error) {
			s.mu.Lock()
			s.runs++
			s.mu.Unlock()
			if !s.encoded {
				return LocalResult{Send: &xmlpipe.SendResponse{To: "poet", Payload: &PoetTask{Text: "rain"}}}, nil
			}
			xml, err := s.poet.AppendPayload(nil, &PoetTask{Text: "rain"})
			if err != nil {
				return LocalResult{}, err
			}
			return LocalResult{Send: &xmlpipe.SendResponse{To: "poet", Payload: &xmlpipe.Encoded{Type: s.poet, XML: xml}}}, nil
		}}
}

func (s *sendTool) runCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// sentMessages describes the messages of a SendAll response: target, ref
// and payload XML.
func sentMessages(t *testing.T, resp xmlpipe.Response) []string {
	t.Helper()
	sends, ok := resp.(*xmlpipe.SendsResponse)
	if !ok {
		return []string{fmt.Sprintf("not a SendAll: %T", resp)}
	}
	var out []string
	for _, s := range sends.Sends {
		var xml []byte
		switch p := s.Payload.(type) {
		case *xmlpipe.Encoded:
			xml = p.XML
		default:
			var err error
			if xml, err = mustPT[PoetTask](t).AppendPayload(nil, p); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, s.To+" "+s.Ref+" "+string(xml))
	}
	return out
}

// TestHaltKeepsAFinishedLocalSend: a halt that stops one local tool of a
// step after another finished by sending a message (the route tool: its
// fill model asked, its request built; the memory tools) keeps that
// message with the step: after the resume — after a restart in between
// too, and after a second halt — the finished tool is not run again (the
// route's fill model is not asked again), only the stopped one, and the
// same message goes out, bound to the same call.
func TestHaltKeepsAFinishedLocalSend(t *testing.T) {
	reply := Reply{Content: "Routing.", ToolCalls: []ToolCall{toolCall("r1", "route", `{"need":"a poem"}`),
		toolCall("s1", "slow", `{}`)}}
	modes := []struct {
		name    string
		halts   int
		restart bool // a new agent over the same history before the resume
	}{
		{name: "once", halts: 1},
		{name: "after a restart", halts: 1, restart: true},
		{name: "halted twice", halts: 2},
	}
	for _, encoded := range []bool{true, false} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("encoded %v/%s", encoded, mode.name), func(t *testing.T) {
				run := func(halts int) (*sendTool, *gateTool, xmlpipe.Response) {
					t.Helper()
					r := newLoopRig(t, reply, Reply{Content: "a poem"})
					route := &sendTool{name: "route", encoded: encoded, poet: mustPT[PoetTask](t)}
					slow := newGateTool("slow")
					r.a.LocalTools = []LocalTool{route.tool(), slow.tool()}
					slow.block(true)
					for i := range halts {
						haltHandling(t, r, message("console", "go", ""), i == 0, r.model, slow.entered)
					}
					slow.block(false)
					if halts > 0 && mode.restart {
						r.a = r.agent()
						r.a.LocalTools = []LocalTool{route.tool(), slow.tool()}
					}
					resp, err := message("console", "go", "").handle(context.Background(), r, halts == 0)
					if err != nil {
						t.Fatal(err)
					}
					if n := len(r.model.requests()); n != 1 {
						t.Errorf("the model was asked %d times; want once", n)
					}
					return route, slow, resp
				}
				_, _, refResp := run(0)
				route, slow, resp := run(mode.halts)
				if diff := cmp.Diff(sentMessages(t, refResp), sentMessages(t, resp)); diff != "" {
					t.Errorf("messages sent after the resume differ from a run without the halt (-without +with):\n%s", diff)
				}
				if route.runCount() != 1 {
					t.Errorf("route ran %d times; want once (it finished before the halt)", route.runCount())
				}
				if slow.runCount() != 1+mode.halts {
					t.Errorf("slow ran %d times; want %d (again after each resume)", slow.runCount(), 1+mode.halts)
				}
			})
		}
	}
}
