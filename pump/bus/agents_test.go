package bus

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Job is the payload of the gate listener: Note "fail" makes it fail.
type Job struct {
	Note string
}

// Ask is the payload of the asker listener (forwards a Job to gate).
type Ask struct {
	Note string
}

// Echo is the payload of the echo listener (responds with an Echo).
type Echo struct {
	Note string
}

// gates hold the gate listener's handler: entered receives the thread of
// each handling as it starts, and each value on release lets one finish.
type gates struct {
	entered chan string
	release chan struct{}
	done    chan struct{} // closed when the test ends: every handler returns
}

func newGates(t *testing.T) *gates {
	g := &gates{entered: make(chan string, 16), release: make(chan struct{}), done: make(chan struct{})}
	return g
}

// enter waits for the gate handler to start and returns its thread.
func (g *gates) enter(t *testing.T) string {
	t.Helper()
	select {
	case th := <-g.entered:
		return th
	case <-time.After(waitTimeout):
		t.Fatal("the gate handler did not start")
	}
	return ""
}

// open lets one gate handling finish.
func (g *gates) open(t *testing.T) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(waitTimeout):
		t.Fatal("no gate handler to release")
	}
}

const statesYAML = `organism:
  name: states
listeners:
  - name: gate
    payload_class: test.Job
    handler: test.Gate
    description: Works until the test releases it
  - name: asker
    payload_class: test.Ask
    handler: test.Ask
    description: Forwards a job to gate
    agent: true
    peers: [gate]
  - name: echo
    payload_class: test.Echo
    handler: test.Echo
    description: Responds with the note
`

// statesOrganism builds the gate/asker/echo organism over g.
func statesOrganism(t *testing.T, g *gates) buildFunc {
	t.Cleanup(func() { close(g.done) }) // runs before the organism's shutdown
	c := catalog.Builtin()
	c.AddPayload(catalog.Payload{Name: "test.Job", Type: reflect.TypeFor[Job]()})
	c.AddPayload(catalog.Payload{Name: "test.Ask", Type: reflect.TypeFor[Ask]()})
	c.AddPayload(catalog.Payload{Name: "test.Echo", Type: reflect.TypeFor[Echo]()})
	c.AddHandler(catalog.Handler{Name: "test.Gate", Takes: reflect.TypeFor[Job](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				g.entered <- md.ThreadID
				select {
				case <-g.release:
				case <-g.done:
				}
				if p.Note == "fail" {
					return nil, errors.New("job failed")
				}
				return nil, nil
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Ask", Takes: reflect.TypeFor[Ask](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Ask, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Send("gate", &Job{Note: p.Note}), nil
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Echo", Takes: reflect.TypeFor[Echo](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Echo, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Respond(&Echo{Note: "echo: " + p.Note}), nil
			})
		}})
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("states.yaml", []byte(statesYAML))
		if err != nil {
			return nil, err
		}
		o.Catalog = c
		return organism.New(cfg, o)
	}
}

// inject posts a payload object to a listener and returns the thread.
func (f *fixture) inject(token, to string, payload any) string {
	f.t.Helper()
	status, body, _ := f.do("POST", "/api/v1/inject", token, map[string]any{"to": to, "payload": payload})
	thread, _ := body["thread_id"].(string)
	if status != 200 || thread == "" {
		f.t.Fatalf("inject to %s: %d %v", to, status, body)
	}
	return thread
}

func TestAgentStates(t *testing.T) {
	g := newGates(t)
	f := newFixtureWith(t, statesOrganism(t, g))
	tok := f.tokens()
	admin := tok[auth.Admin]
	completed := f.watchCompletions()
	stream := f.dial("/api/v1/ws", tok[auth.Viewer])
	readFrame(t, stream) // connected
	writeFrame(t, stream, frame{"cmd": "subscribe", "agents": []string{"gate"}, "events": []string{"agent_state"}})
	if got := readSubscribed(t, stream); got["event"] != "subscribed" {
		t.Fatalf("subscribe: %v", got)
	}

	// agent returns an agent's state and current thread ("" for null).
	agent := func(name string) (state, current string, body map[string]any) {
		t.Helper()
		status, body, _ := f.do("GET", "/api/v1/agents/"+name, admin, nil)
		if status != 200 {
			t.Fatalf("agent %s: %d %v", name, status, body)
		}
		if _, ok := body["current_thread"]; !ok {
			t.Errorf("agent %s has no current_thread: %v", name, body)
		}
		current, _ = body["current_thread"].(string)
		return body["state"].(string), current, body
	}
	want := func(name, state, current string) map[string]any {
		t.Helper()
		gotState, gotCurrent, body := agent(name)
		if gotState != state || gotCurrent != current {
			t.Fatalf("%s: state %q current_thread %q, want %q %q (%v)", name, gotState, gotCurrent, state, current, body)
		}
		return body
	}
	// streamed waits for the stream's agent_state event of gate in state
	// (events come on changes; earlier states may pass first).
	streamed := func(state, current string) {
		t.Helper()
		for {
			ev := readFrame(t, stream)
			if ev["event"] != "agent_state" || ev["agent"] != "gate" {
				t.Fatalf("stream event %v", ev)
			}
			cur, _ := ev["current_thread"].(string)
			if ev["state"] == state && cur == current {
				return
			}
		}
	}

	body := want("gate", "idle", "")
	if body["last_error"] != nil {
		t.Errorf("last_error before any failure: %v", body["last_error"])
	}

	// processing, then error.
	failing := f.inject(admin, "gate", map[string]string{"note": "fail"})
	th := g.enter(t)
	if th != failing {
		t.Errorf("gate handles %s, injected %s", th, failing)
	}
	want("gate", "processing", th)
	streamed("processing", th)
	g.open(t)
	completed.wait(t, failing)
	body = want("gate", "error", "")
	if msg, _ := body["last_error"].(string); !strings.Contains(msg, "job failed") || body["last_error_at"] == nil {
		t.Errorf("last_error %v at %v", body["last_error"], body["last_error_at"])
	}
	streamed("error", "")

	// A handling that succeeds clears the error.
	ok := f.inject(admin, "gate", map[string]string{"note": "ok"})
	want("gate", "processing", g.enter(t))
	g.open(t)
	completed.wait(t, ok)
	want("gate", "idle", "")
	streamed("idle", "")

	// waiting: asker forwarded to gate, whose handler runs.
	asked := f.inject(admin, "asker", map[string]string{"note": "please"})
	th = g.enter(t)
	want("asker", "waiting", "")
	want("gate", "processing", th)
	status, list, _ := f.do("GET", "/api/v1/agents", admin, nil)
	states := map[string]any{}
	for _, a := range list["agents"].([]any) {
		a := a.(map[string]any)
		states[a["name"].(string)] = a["state"]
	}
	if status != 200 || states["asker"] != "waiting" || states["gate"] != "processing" || states["echo"] != "idle" {
		t.Errorf("agents: %d %v", status, states)
	}
	g.open(t)
	completed.wait(t, asked)
	want("asker", "idle", "") // the forward's conversation is over

	// paused.
	if status, body, _ := f.do("POST", "/api/v1/agents/gate/pause", admin, nil); status != 200 || body["state"] != "paused" {
		t.Fatalf("pause: %d %v", status, body)
	}
	want("gate", "paused", "")
	streamed("paused", "")
	if status, body, _ := f.do("POST", "/api/v1/agents/gate/resume", admin, nil); status != 200 || body["state"] != "idle" {
		t.Fatalf("resume: %d %v", status, body)
	}
}
