package bus

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// switchedStorage is a pump.Storage whose failure the test switches on.
type switchedStorage struct{ failing atomic.Bool }

// errStorageFull is what switchedStorage reports while it fails.
var errStorageFull = errors.New("disk full: database or disk is full (13)")

// Failing returns errStorageFull while the storage fails.
func (s *switchedStorage) Failing() error {
	if s.failing.Load() {
		return errStorageFull
	}
	return nil
}

// TestStorageFailingRefusedBeforeParse: while the organism's storage
// cannot commit (a full disk), every ingress — REST inject, the stream's
// inject, /ws, /bus — answers a new message that it cannot journal it
// now, nothing was done, retry later (with the hint), without the pump
// reading or validating anything of it; once the storage recovers the
// next message is taken.
func TestStorageFailingRefusedBeforeParse(t *testing.T) {
	st := &switchedStorage{}
	var reads, validations atomic.Int64
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) {
		o.Storage = st
		o.Observer = pump.StageObserverFunc(func(s pump.StageSample) {
			switch s.Stage {
			case pump.StageRead:
				reads.Add(1)
			case pump.StageValidate:
				validations.Add(1)
			}
		})
		return helloWorld(o)
	})
	admin := f.tokens()[auth.Admin]
	ws := f.dial("/ws", admin)
	readFrame(t, ws) // connected
	stream := f.dial("/api/v1/ws", admin)
	readFrame(t, stream)
	bus := f.dial("/bus", admin)
	st.failing.Store(true)

	const want = "The organism cannot journal messages now (disk full: database or disk is full (13)); nothing was done; retry later"
	tests := []struct {
		name string
		send func(t *testing.T)
	}{
		{"REST", func(t *testing.T) {
			status, body, h := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "greeter", "payload": map[string]string{"name": "Dan"}})
			if status != 503 || body["error"] != want || body["retry_after"] != 5.0 || h.Get("Retry-After") != "5" {
				t.Errorf("inject: %d %v Retry-After %q, want 503 %q retry after 5", status, body, h.Get("Retry-After"), want)
			}
		}},
		{"REST payload not well-formed", func(t *testing.T) {
			status, body, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "greeter", "payload": "<Greeting><Name>Dan</Greeting>"})
			if status != 503 || body["error"] != want {
				t.Errorf("inject: %d %v, want 503 %q", status, body, want)
			}
		}},
		{"stream", func(t *testing.T) {
			writeFrame(t, stream, frame{"cmd": "inject", "to": "greeter", "payload": map[string]string{"name": "Dan"}})
			got := readFrame(t, stream)
			for got["event"] != "error" && got["event"] != "injected" {
				got = readFrame(t, stream)
			}
			if got["event"] != "error" || got["error"] != want || got["retry_after"] != 5.0 {
				t.Errorf("stream inject: %v, want the error %q retry after 5", got, want)
			}
		}},
		{"ws text", func(t *testing.T) {
			writeFrame(t, ws, frame{"type": "send", "id": 1, "target": "greeter", "content": "Dan"})
			if got := readFrame(t, ws); got["code"] != "unavailable" || got["error"] != want || got["retry_after"] != 5.0 || got["id"] != 1.0 {
				t.Errorf("send: %v, want unavailable %q retry after 5", got, want)
			}
		}},
		{"ws raw", func(t *testing.T) {
			writeFrame(t, ws, frame{"type": "send", "id": 2, "raw": "@greeter <Greeting><Name>Dan</Greeting>"})
			if got := readFrame(t, ws); got["code"] != "unavailable" || got["error"] != want || got["id"] != 2.0 {
				t.Errorf("send: %v, want unavailable %q", got, want)
			}
		}},
		{"bus", func(t *testing.T) {
			sendRaw(t, bus, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>`+
				`<to>greeter</to><thread>`+stage.NewThreadID()+`</thread></meta><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`)
			if huh, got := readEnvelope(t, bus); huh.Payload.XMLName.Local != "huh" || huh.Payload.Error != want {
				t.Errorf("frame: %s, want a <huh> saying %q", got, want)
			}
		}},
		{"bus by root tag", func(t *testing.T) {
			sendRaw(t, bus, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>`+
				`<thread>`+stage.NewThreadID()+`</thread></meta><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`)
			if huh, got := readEnvelope(t, bus); huh.Payload.Error != want {
				t.Errorf("frame: %s, want a <huh> saying %q", got, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, v := reads.Load(), validations.Load()
			tt.send(t)
			if dr, dv := reads.Load()-r, validations.Load()-v; dr != 0 || dv != 0 {
				t.Errorf("the pump read %d and validated %d messages for a message refused while the storage failed, want none", dr, dv)
			}
		})
	}

	st.failing.Store(false) // the operator freed room
	writeFrame(t, ws, frame{"type": "send", "id": 10, "target": "greeter", "content": "Dan"})
	if got := readFrame(t, ws); got["type"] != "sent" || got["id"] != 10.0 {
		t.Fatalf("send once the storage recovered: %v, want it taken", got)
	}
}
