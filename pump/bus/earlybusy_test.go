package bus

import (
	"context"
	"encoding/base64"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Stall is the payload of the stalling listener.
type Stall struct {
	Text string
}

// stallClock is the organism's clock in the early-busy test, moved by it.
type stallClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stallClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stallClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// stallOrganism builds an organism whose one listener, slow, handles one
// message at a time: each handling signals started and runs until release
// gives it a token (or is closed). Its clock is clock; reads and
// validations count the ingress stages the pump ran (every message's read,
// every payload validation).
func stallOrganism(clock *stallClock, started chan<- string, release <-chan struct{}, reads, validations *atomic.Int64) buildFunc {
	c := catalog.Builtin()
	c.AddPayload(catalog.Payload{Name: "test.Stall", Type: reflect.TypeFor[Stall]()})
	c.AddHandler(catalog.Handler{Name: "test.Stall", Takes: reflect.TypeFor[Stall](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, p *Stall, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				started <- p.Text
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, nil
			})
		}})
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("stall.yaml", []byte(`organism: {name: stall}
max_queue_wait: 5s
listeners:
  - {name: slow, payload_class: test.Stall, handler: test.Stall, description: Stalls, max_concurrent: 1}
`))
		if err != nil {
			return nil, err
		}
		o.Catalog, o.Clock = c, clock.Now
		o.Observer = pump.StageObserverFunc(func(s pump.StageSample) {
			switch s.Stage {
			case pump.StageRead:
				reads.Add(1)
			case pump.StageValidate:
				validations.Add(1)
			}
		})
		return organism.New(cfg, o)
	}
}

// TestBusyRefusedBeforeParse: once admission refused a message at a
// listener at once (it has gone past max_queue_wait without finishing a
// handling, messages waiting), every ingress — /ws, REST inject, /bus —
// answers the next messages for it busy without the pump reading or
// validating anything of them: the envelope is not built, parsed or
// checked, so a message with a payload its schema refuses is told "busy"
// too, as the pump would have told it had it been refused first. A message
// naming another user's conversation still meets the ownership check (the
// security event), and once a handling there ends, messages are taken
// again.
func TestBusyRefusedBeforeParse(t *testing.T) {
	clock := &stallClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	started, release := make(chan string, 16), make(chan struct{})
	var reads, validations atomic.Int64
	f := newFixtureWith(t, stallOrganism(clock, started, release, &reads, &validations))
	t.Cleanup(func() { close(release) })
	tok := f.tokens()
	admin, op := tok[auth.Admin], tok[auth.Operator]
	awaitStart := func(want string) {
		t.Helper()
		select {
		case got := <-started:
			if got != want {
				t.Fatalf("handling of %q started, want %q", got, want)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("handling of %q never started", want)
		}
	}
	running := f.inject(admin, "slow", map[string]string{"text": "a"})
	awaitStart("a")
	f.inject(admin, "slow", map[string]string{"text": "b"}) // waits behind a
	clock.advance(10 * time.Second)                         // a stalls past max_queue_wait
	const want = "Organism busy: listener slow busy: about 10s of work queued"
	status, body, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "slow", "payload": map[string]string{"text": "c"}})
	if status != 429 || body["error"] != want {
		t.Fatalf("inject at the stalled listener: %d %v, want 429 %q", status, body, want)
	}

	ws := f.dial("/ws", admin)
	readFrame(t, ws) // connected
	bus := f.dial("/bus", admin)
	// refusedEarly checks one message is answered busy by its ingress, with
	// nothing of it read or validated by the pump.
	tests := []struct {
		name string
		send func(t *testing.T)
	}{
		{"ws text", func(t *testing.T) {
			writeFrame(t, ws, frame{"type": "send", "id": 1, "target": "slow", "content": "d"})
			if got := readFrame(t, ws); got["code"] != "busy" || got["error"] != want || got["retry_after"] != 5.0 || got["id"] != 1.0 {
				t.Errorf("send: %v, want busy %q retry after 5", got, want)
			}
		}},
		{"ws payload its schema refuses", func(t *testing.T) {
			writeFrame(t, ws, frame{"type": "send", "id": 2, "target": "slow", "payload": map[string]any{"text": "e", "colour": "red"}})
			if got := readFrame(t, ws); got["code"] != "busy" || got["id"] != 2.0 {
				t.Errorf("send: %v, want busy", got)
			}
		}},
		{"ws raw", func(t *testing.T) {
			writeFrame(t, ws, frame{"type": "send", "id": 3, "raw": "@slow <Stall><Text>f</Stall>"})
			if got := readFrame(t, ws); got["code"] != "busy" || got["id"] != 3.0 {
				t.Errorf("send: %v, want busy", got)
			}
		}},
		{"REST XML payload not well-formed", func(t *testing.T) {
			status, body, h := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "slow", "payload": "<Stall><Text>g</Stall>"})
			if status != 429 || body["error"] != want || h.Get("Retry-After") != "5" {
				t.Errorf("inject: %d %v Retry-After %q, want 429 %q", status, body, h.Get("Retry-After"), want)
			}
		}},
		{"bus", func(t *testing.T) {
			raw := `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>` +
				`<to>slow</to><thread>` + stage.NewThreadID() + `</thread></meta><Stall xmlns=""><Colour>red</Colour></Stall></message>`
			sendRaw(t, bus, raw)
			huh, got := readEnvelope(t, bus)
			if huh.Payload.XMLName.Local != "huh" || huh.Payload.Error != "Organism busy; retry in 5 s" {
				t.Fatalf("frame: %s, want a busy <huh>", got)
			}
			if orig, err := base64.StdEncoding.DecodeString(huh.Payload.Original); err != nil || string(orig) != raw {
				t.Errorf("original-attempt %q (%v)", orig, err)
			}
		}},
		{"bus payload not well-formed", func(t *testing.T) {
			// Its target is in its head: nothing after the payload's start
			// tag is looked at to refuse it.
			sendRaw(t, bus, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>`+
				`<to>slow</to><thread>`+stage.NewThreadID()+`</thread></meta><Stall xmlns=""><Text>h</Stall></message>`)
			if huh, got := readEnvelope(t, bus); huh.Payload.Error != "Organism busy; retry in 5 s" {
				t.Fatalf("frame: %s, want a busy <huh>", got)
			}
		}},
		{"bus by root tag", func(t *testing.T) {
			sendRaw(t, bus, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>`+
				`<thread>`+stage.NewThreadID()+`</thread></meta><Stall xmlns=""><Text>h</Text></Stall></message>`)
			if huh, got := readEnvelope(t, bus); huh.Payload.Error != "Organism busy; retry in 5 s" {
				t.Fatalf("frame: %s, want a busy <huh>", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, v := reads.Load(), validations.Load()
			tt.send(t)
			if dr, dv := reads.Load()-r, validations.Load()-v; dr != 0 || dv != 0 {
				t.Errorf("the pump read %d and validated %d messages for a message refused busy, want none", dr, dv)
			}
		})
	}

	// Another user's conversation: the pump's ownership check answers,
	// as ever (and the security event is logged), not busy.
	opWS := f.dial("/ws", op)
	readFrame(t, opWS)
	writeFrame(t, opWS, frame{"type": "send", "id": 9, "target": "slow", "content": "i", "thread_id": running})
	if got := readFrame(t, opWS); got["code"] != "rejected" {
		t.Errorf("send on another user's conversation at the busy listener: %v, want it rejected as foreign", got)
	}

	// a's handling ends, b's starts: the stall is over and a message is
	// taken again (b running, nothing waiting).
	release <- struct{}{}
	awaitStart("b")
	writeFrame(t, ws, frame{"type": "send", "id": 10, "target": "slow", "content": "j"})
	if got := readFrame(t, ws); got["type"] != "sent" || got["id"] != 10.0 {
		t.Fatalf("send once a handling ended: %v, want it taken", got)
	}
}
