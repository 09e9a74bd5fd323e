package bus

import (
	"net/http"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestCallsListAnAbortedCall: a model call an emergency halt, a cancel or a
// kill stops while the model streams is listed by GET /api/v1/usage/calls
// with the outcome "aborted" (finish_reason "aborted", the error saying
// how) and the tokens it spent — estimated from the prompt and the text
// streamed before the stop — rather than as a model failure with no
// tokens, marked as an estimate (usage_estimated); after a halt's resume
// the call asked again reads "completed", its usage the model's own.
func TestCallsListAnAbortedCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stop stops the conversation conv; resume, when set, lets it go on.
		stop   func(f *fixture, token, conv string) (int, map[string]any)
		resume bool
	}{
		{name: "halt", resume: true, stop: func(f *fixture, token, _ string) (int, map[string]any) {
			status, body, _ := f.do("POST", "/api/v1/organism/halt", token, map[string]string{"scope": "all"})
			return status, body
		}},
		{name: "cancel", stop: func(f *fixture, token, conv string) (int, map[string]any) {
			status, body, _ := f.do("POST", "/api/v1/threads/"+conv+"/cancel", token, nil)
			return status, body
		}},
		{name: "kill", stop: func(f *fixture, token, conv string) (int, map[string]any) {
			status, body, _ := f.do("POST", "/api/v1/threads/"+conv+"/kill", token, nil)
			return status, body
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.NewChatModel(t, func(n int) []string { return []string{"Rain on tin", " roofs"} })
			m.Hold = make(chan struct{})
			t.Cleanup(func() { close(m.Hold) })
			f := newFixtureWith(t, agentOrganism(m.URL))
			ada := f.loginAs("ada", auth.Admin)
			events := f.dial("/api/v1/ws", ada)
			if got := readFrame(t, events); got["event"] != "connected" {
				t.Fatalf("first frame %v", got)
			}
			conv := f.inject(ada, "poet", map[string]string{"text": "rain"})
			// Stop the call once the agent has read the model's first text
			// (the model having sent it is not enough: a stop before the
			// agent reads it finds no reply begun, and nothing spent).
			for {
				if ev := readFrame(t, events); ev["event"] == "delta" && ev["thread_id"] == conv {
					break
				}
			}
			if status, body := tc.stop(f, ada, conv); status != http.StatusOK {
				t.Fatalf("%s: %d %v", tc.name, status, body)
			}

			calls := func(want int) []map[string]any {
				t.Helper()
				var out []map[string]any
				pollFor(t, "the calls listed", func() bool {
					status, body, _ := f.do("GET", "/api/v1/usage/calls?thread="+conv, ada, nil)
					if status != http.StatusOK {
						t.Fatalf("calls: %d %v", status, body)
					}
					list, _ := body["calls"].([]any)
					out = out[:0]
					for _, c := range list {
						out = append(out, c.(map[string]any))
					}
					return len(out) >= want
				})
				return out
			}
			c := calls(1)[0]
			if c["outcome"] != "aborted" || c["finish_reason"] != "aborted" || c["agent"] != "poet" {
				t.Errorf("call %v: want outcome and finish_reason aborted, agent poet", c)
			}
			if e, _ := c["error"].(string); !strings.Contains(e, "context canceled") {
				t.Errorf("call %v: want the error saying how it was stopped", c)
			}
			if p, _ := c["prompt_tokens"].(float64); p <= 0 {
				t.Errorf("call %v: want the prompt's tokens known", c)
			}
			if n, _ := c["completion_tokens"].(float64); n <= 0 {
				t.Errorf("call %v: want the streamed text's tokens known", c)
			}
			if c["usage_estimated"] != true {
				t.Errorf("call %v: want usage_estimated true (no usage came, the tokens are an estimate)", c)
			}
			if !tc.resume {
				return
			}
			if status, body, _ := f.do("POST", "/api/v1/organism/resume", ada, nil); status != http.StatusOK {
				t.Fatalf("resume: %d %v", status, body)
			}
			again := calls(2)[1]
			if again["outcome"] != "completed" || again["finish_reason"] != "stop" || again["error"] != nil {
				t.Errorf("the call after the resume %v: want outcome completed", again)
			}
			if _, ok := again["usage_estimated"]; ok {
				t.Errorf("the call after the resume %v: the model reported its usage, want no usage_estimated", again)
			}
		})
	}
}
