package organism

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// hangingModel is a loopback OpenAI-protocol server whose first request
// blocks until its connection is closed (at most 20 s) and whose later
// requests answer at once.
type hangingModel struct {
	*httptest.Server
	started chan struct{} // the first request arrived
	closed  chan time.Time
	mu      sync.Mutex
	n       int
}

func newHangingModel(t *testing.T) *hangingModel {
	m := &hangingModel{started: make(chan struct{}), closed: make(chan time.Time, 1)}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		m.mu.Lock()
		m.n++
		n := m.n
		m.mu.Unlock()
		if n == 1 {
			close(m.started)
			select {
			case <-r.Context().Done(): // the client closed the connection
				m.closed <- time.Now()
			case <-time.After(20 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "answered after the halt"}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *hangingModel) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

const haltOrganism = `listeners:
  - name: thinker
    agent: true
    description: Thinks slowly
    prompt: You are thinker.
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints
`

func TestHaltAbortsTheModelRequestAndResumeRunsTheTurn(t *testing.T) {
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
	rep, err := o.Governance().Halt("test", pump.HaltAgents)
	if err != nil || rep.Cancelled != 1 {
		t.Fatalf("Halt: %+v %v", rep, err)
	}
	select {
	case at := <-m.closed:
		if d := at.Sub(t0); d > 2*time.Second {
			t.Fatalf("the model request was closed %v after the halt, want < 2s", d)
		} else {
			t.Logf("the model request was closed %v after the halt", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the model request was not closed within 2 s of the halt")
	}
	if scope, ok := o.Governance().Halted(); !ok || scope != "agents" {
		t.Fatalf("Halted() = %q %v", scope, ok)
	}
	// The organism stays up: a listener that is not an agent still answers.
	if _, err := o.Pump.Send(t.Context(), "console", "shouter", &hello.GreetingResponse{Message: "still here",
		OriginalSender: "response-handler"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-out.ch:
		if line != "[shouter] STILL HERE" {
			t.Fatalf("printed %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shouter did not answer during the halt")
	}
	if n := m.requests(); n != 1 {
		t.Fatalf("%d model requests during the halt, want 1", n)
	}
	if !o.Governance().Resume("test") {
		t.Fatal("Resume: no halt in force")
	}
	if text := c.answer(t); text != "answered after the halt" {
		t.Fatalf("answer %q", text)
	}
	if _, ok := o.Governance().Halted(); ok {
		t.Fatal("still halted")
	}
}

func TestKillAbortsTheModelRequest(t *testing.T) {
	m := newHangingModel(t)
	o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, haltOrganism, Options{})
	c := startConversation(t, o, "thinker", "think hard")
	select {
	case <-m.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the model request never started")
	}
	t0 := time.Now()
	if _, err := o.Pump.Kill(c.id); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-m.closed:
		if d := at.Sub(t0); d > 2*time.Second {
			t.Fatalf("closed %v after the kill", d)
		} else {
			t.Logf("the model request was closed %v after the kill", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the model request was not closed within 2 s of the kill")
	}
}

// TestHaltKeptAcrossRestart: an emergency halt of a durable organism is in
// force again after a restart — a crash or a supervisor's restart does not
// resume the work the operator stopped — until Resume lifts it, which a
// further restart keeps lifted.
func TestHaltKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *Organism {
		t.Helper()
		o, err := New(helloConfig(t, nil), Options{DataDir: dir, Logger: fedLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		return o
	}
	stop := func(o *Organism) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	o := start()
	if _, err := o.Governance().Halt("operator", pump.HaltAgents); err != nil {
		t.Fatal(err)
	}
	stop(o)
	o = start()
	if scope, ok := o.Governance().Halted(); !ok || scope != "agents" {
		t.Fatalf("after a restart the halt is %q (in force %v), want agents", scope, ok)
	}
	if !o.Governance().Resume("operator") {
		t.Fatal("Resume found no halt")
	}
	stop(o)
	o = start()
	defer stop(o)
	if scope, ok := o.Governance().Halted(); ok {
		t.Fatalf("a halt lifted before the restart is in force again: %q", scope)
	}
}
