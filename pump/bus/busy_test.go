package bus

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// smallBudget builds the hello-world organism with an admission budget of
// 16 (a listener's share is 2) and a 200 ms wait for room.
func smallBudget(o organism.Options) (*organism.Organism, error) {
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		return nil, err
	}
	cfg.MaxInFlight, cfg.AdmitWait = 16, config.Duration(200*time.Millisecond)
	return organism.New(cfg, o)
}

// shoutPayload is a REST payload for shouter.
var shoutPayload = map[string]string{"message": "hi", "original_sender": "response-handler"}

// TestInjectBusy: with a listener stalled (paused, its share of the budget
// queued), every ingress answers a message for it within a bounded time
// with its busy answer — REST 429 with Retry-After, a "busy" error frame on
// /ws and the event stream, a <huh> on /bus — and nothing hangs, while a
// message for another listener is still taken.
func TestInjectBusy(t *testing.T) {
	f := newFixtureWith(t, smallBudget)
	admin := f.tokens()[auth.Admin]
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", admin, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	for range 2 { // shouter's share
		f.inject(admin, "shouter", shoutPayload)
	}
	const want = "Organism busy: listener shouter busy"
	t.Run("REST", func(t *testing.T) {
		start := time.Now()
		status, body, h := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "shouter", "payload": shoutPayload})
		if status != 429 || body["error"] != want || body["retry_after"] != 1.0 || h.Get("Retry-After") != "1" {
			t.Fatalf("inject to a stalled listener: %d %v Retry-After %q; want 429 %q, retry after 1", status, body,
				h.Get("Retry-After"), want)
		}
		if waited := time.Since(start); waited > waitTimeout/2 {
			t.Errorf("answered after %s", waited)
		}
		// Another listener still takes messages.
		f.inject(admin, "greeter", map[string]string{"name": "Ann"})
	})
	t.Run("ws", func(t *testing.T) {
		c := f.dial("/ws", admin)
		readFrame(t, c)
		writeFrame(t, c, frame{"type": "send", "target": "shouter", "content": "hi", "id": 7})
		got := readFrame(t, c)
		if got["type"] != "error" || got["code"] != "busy" || got["error"] != want || got["retry_after"] != 1.0 || got["id"] != 7.0 {
			t.Fatalf("send to a stalled listener: %v", got)
		}
		writeFrame(t, c, frame{"type": "send", "target": "greeter", "content": "Bo"})
		if got := readFrame(t, c); got["type"] != "sent" {
			t.Fatalf("send to another listener: %v", got)
		}
	})
	t.Run("stream", func(t *testing.T) {
		c := f.dial("/api/v1/ws", admin)
		readFrame(t, c)
		writeFrame(t, c, frame{"cmd": "inject", "to": "shouter", "payload": shoutPayload})
		// Sampled states and the earlier subtests' conversations (their
		// thread_created and message events, greeter's answers on their
		// way to the paused shouter) interleave: the command's answer is
		// the first error that is not a published one (those have a kind)
		// or an injected.
		answer := func(f frame) bool {
			_, published := f["kind"]
			return f["event"] == "injected" || f["event"] == "error" && !published
		}
		got := readFrame(t, c)
		for !answer(got) {
			got = readFrame(t, c)
		}
		if got["event"] != "error" || got["error"] != want || got["retry_after"] != 1.0 {
			t.Fatalf("stream inject to a stalled listener: %v", got)
		}
	})
	t.Run("bus", func(t *testing.T) {
		c := f.dial("/bus", admin)
		frame := `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-admin</from>` +
			`<to>shouter</to><thread>` + stage.NewThreadID() + `</thread></meta><GreetingResponse xmlns="">` +
			`<Message>hi</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse></message>`
		sendRaw(t, c, frame)
		huh, raw := readEnvelope(t, c)
		if huh.From != "core" || huh.Payload.XMLName.Local != "huh" || huh.Payload.Error != "Organism busy; retry in 1 s" {
			t.Fatalf("frame for a stalled listener: %s", raw)
		}
		if orig, err := base64.StdEncoding.DecodeString(huh.Payload.Original); err != nil || string(orig) != frame {
			t.Errorf("original-attempt %q (%v)", orig, err)
		}
		sendRaw(t, c, envelope("websocket:user-admin", stage.NewThreadID(), "Cy"))
		if e, raw := readEnvelope(t, c); e.From != "greeter" {
			t.Fatalf("frame for another listener: %s", raw)
		}
	})
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/resume", admin, nil); status != 200 {
		t.Fatalf("resume: %d %v", status, body)
	}
	// Once shouter drained, it takes messages again.
	deadline := time.Now().Add(waitTimeout)
	for {
		status, body, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "shouter", "payload": shoutPayload})
		if status == 200 {
			break
		}
		if status != 429 || time.Now().After(deadline) || !strings.HasPrefix(body["error"].(string), "Organism busy") {
			t.Fatalf("inject after resume: %d %v", status, body)
		}
	}
}
