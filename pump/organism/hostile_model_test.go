package organism

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// TestHostileModelReplies: a model server that answers 50 MB, then a
// truncated event stream of a tool call, then a tool call naming no function
// with arguments that are not JSON: the agent's user gets an answer each time
// (a failure said as such, or the model's correction), and the organism
// answers the next question.
func TestHostileModelReplies(t *testing.T) {
	good := scripted(t, config.OpenAI,
		call(scriptedCall{"x1", "", `{"Expression":`}),
		say("Recovered."))
	var n atomic.Int64
	m := &wireModel{t: t, provider: config.OpenAI, script: good.script}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // 50 MB of one JSON document
			w.Header().Set("Content-Type", "application/json")
			if _, err := w.Write([]byte(`{"choices":[{"message":{"content":"`)); err != nil {
				return
			}
			chunk := []byte(strings.Repeat("a", 64<<10))
			for range 800 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case 2: // an event stream, cut in the middle of a tool call, where JSON was asked
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"calculate\",\"arguments\":\"{\\\"Expr"))
		default:
			m.serve(w, r)
		}
	}))
	t.Cleanup(m.Close)
	o := wireOrganism(t, m, mathbot)
	for i, want := range []string{"", "", "Recovered."} {
		got := ask(t, o, "mathbot", "6*7?")
		t.Logf("answer %d: %q", i+1, got)
		if want != "" && got != want {
			t.Errorf("answer %d = %q, want %q", i+1, got, want)
		}
		if want == "" && !strings.Contains(got, "malformed reply") {
			t.Errorf("answer %d = %q, want the failure said", i+1, got)
		}
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests after the hostile ones, want 2", len(reqs))
	}
	if got := jsonOf(messages(reqs[1])); !strings.Contains(got, "called a tool without naming the function, so nothing ran") {
		t.Errorf("the call naming no function was not answered as such: %s", got)
	}
}
