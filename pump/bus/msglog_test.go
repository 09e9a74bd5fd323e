package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// logLine is the part of a log message a test compares.
type logLine struct {
	Thread, From, To, Type, Payload string
	Slot                            any // float64, or nil for a reply
}

// resubscribe sends a new filter and returns the log messages that arrived
// before its answer (everything the previous filter let through so far).
func resubscribe(t *testing.T, c *websocket.Conn, filter map[string][]string) []frame {
	t.Helper()
	writeFrame(t, c, frame{"cmd": "subscribe", "filter": filter})
	var got []frame
	for {
		fr := readFrame(t, c)
		if fr["event"] == "subscribed" {
			return got
		}
		if fr["event"] != nil {
			t.Fatalf("unexpected frame %v", fr)
		}
		got = append(got, fr)
	}
}

// lines reduces log messages to what the tests compare, checking the
// fields every message has.
func lines(t *testing.T, frames []frame) []logLine {
	t.Helper()
	var out []logLine
	for _, fr := range frames {
		if id, _ := fr["id"].(string); len(id) != 64 || fr["timestamp"] == "" {
			t.Errorf("log message without id or timestamp: %v", fr)
		}
		if _, ok := fr["slot_index"]; !ok {
			t.Errorf("log message without slot_index: %v", fr)
		}
		out = append(out, logLine{Thread: fr["thread_id"].(string), From: fr["from"].(string), To: fr["to"].(string),
			Type: fr["payload_type"].(string), Payload: fr["payload"].(string), Slot: fr["slot_index"]})
	}
	return out
}

func TestMessageLog(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()
	op := tok[auth.Operator]
	completed := f.watchCompletions()
	c := f.dial("/api/v1/ws/messages", tok[auth.Viewer])

	// Nothing is sent before the first subscribe.
	before := f.inject(op, "greeter", map[string]string{"name": "Early"})
	completed.wait(t, before)
	writeFrame(t, c, frame{"cmd": "subscribe", "filter": map[string][]string{"agents": {"shouter"}}})
	ack := readFrame(t, c)
	if diff := cmp.Diff(frame{"event": "subscribed", "filter": map[string]any{"agents": []any{"shouter"},
		"threads": []any{}, "payload_types": []any{}}}, ack); diff != "" {
		t.Fatalf("subscribe (-want +got):\n%s", diff)
	}

	// By agent: what shouter receives and sends.
	ann := f.inject(op, "greeter", map[string]string{"name": "Ann"})
	completed.wait(t, ann)
	got := resubscribe(t, c, map[string][]string{"threads": {}})
	for _, fr := range got {
		if fr["conversation"] != ann {
			t.Errorf("message of another conversation: %v", fr)
		}
	}
	ls := lines(t, got)
	if len(ls) != 2 {
		t.Fatalf("agent filter: %v", ls)
	}
	if diff := cmp.Diff([]logLine{
		{Thread: ls[0].Thread, From: "greeter", To: "shouter", Type: "GreetingResponse", Slot: 0.0,
			Payload: "<GreetingResponse><Message>Hello, Ann!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>"},
		{Thread: ls[1].Thread, From: "shouter", To: "response-handler", Type: "ShoutedResponse", Slot: 0.0,
			Payload: "<ShoutedResponse><Message>HELLO, ANN!</Message></ShoutedResponse>"},
	}, ls); diff != "" {
		t.Errorf("agent filter (-want +got):\n%s", diff)
	}

	// By thread (its conversation's every message), and the ids are the
	// REST API's message ids.
	conv := stage.NewThreadID()
	if got := resubscribe(t, c, map[string][]string{"threads": {conv}}); len(got) != 0 {
		t.Errorf("messages while nothing happened: %v", got)
	}
	other := f.inject(op, "greeter", map[string]string{"name": "Other"})
	completed.wait(t, other)
	status, inj, _ := f.do("POST", "/api/v1/inject", op, map[string]any{"to": "greeter", "thread_id": conv,
		"payload": map[string]string{"name": "Tim"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, inj)
	}
	completed.wait(t, conv)
	got = resubscribe(t, c, map[string][]string{"payload_types": {"Greeting"}})
	var types []string
	for _, l := range lines(t, got) {
		types = append(types, l.Type)
	}
	if diff := cmp.Diff([]string{"Greeting", "GreetingResponse", "ShoutedResponse"}, types); diff != "" {
		t.Fatalf("thread filter (-want +got):\n%s", diff)
	}
	if first := got[0]; first["id"] != inj["message_id"] || first["thread_id"] != conv || first["slot_index"] != 0.0 ||
		first["from"] != "api:user-operator" || first["payload"] != "<Greeting><Name>Tim</Name></Greeting>" {
		t.Errorf("first message %v, want id %v", first, inj["message_id"])
	}
	f.waitJournal()
	_, rest, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages?scope=conversation", tok[auth.Viewer], nil)
	var restIDs, logIDs []any
	for _, m := range rest["messages"].([]any) {
		restIDs = append(restIDs, m.(map[string]any)["id"])
	}
	for _, fr := range got {
		logIDs = append(logIDs, fr["id"])
	}
	if diff := cmp.Diff(restIDs, logIDs); diff != "" {
		t.Errorf("log ids differ from the REST ids (-rest +log):\n%s", diff)
	}

	// By payload type; a second message on the same thread is its slot 1.
	status, inj, _ = f.do("POST", "/api/v1/inject", op, map[string]any{"to": "greeter", "thread_id": conv,
		"payload": map[string]string{"name": "Tom"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, inj)
	}
	completed.wait(t, conv)
	fresh := f.inject(op, "greeter", map[string]string{"name": "New"})
	completed.wait(t, fresh)
	got = resubscribe(t, c, map[string][]string{"agents": {"nobody"}})
	if diff := cmp.Diff([]logLine{
		{Thread: conv, From: "api:user-operator", To: "greeter", Type: "Greeting", Slot: 1.0,
			Payload: "<Greeting><Name>Tom</Name></Greeting>"},
		{Thread: fresh, From: "api:user-operator", To: "greeter", Type: "Greeting", Slot: 0.0,
			Payload: "<Greeting><Name>New</Name></Greeting>"},
	}, lines(t, got)); diff != "" {
		t.Errorf("payload type filter (-want +got):\n%s", diff)
	}
	if n := f.srv.slots.size(); n != 0 {
		t.Errorf("%d threads still counted after every conversation completed", n)
	}
	if n := f.srv.slots.pendingSize(); n != 0 {
		t.Errorf("%d numbered messages still pending after every conversation completed", n)
	}

	// Commands the stream does not know.
	writeFrame(t, c, frame{"cmd": "dance"})
	if got := readFrame(t, c); got["event"] != "error" || got["error"] != "Unknown command: dance" {
		t.Errorf("unknown command: %v", got)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("{")); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, c); got["event"] != "error" || got["error"] != "Invalid JSON" {
		t.Errorf("invalid JSON: %v", got)
	}
}

func TestMessageLogReply(t *testing.T) {
	g := newGates(t)
	f := newFixtureWith(t, statesOrganism(t, g))
	tok := f.tokens()
	completed := f.watchCompletions()
	c := f.dial("/api/v1/ws/messages", tok[auth.Viewer])
	if got := resubscribe(t, c, map[string][]string{}); len(got) != 0 {
		t.Fatalf("messages before the first subscribe: %v", got)
	}
	conv := f.inject(tok[auth.Operator], "echo", map[string]string{"note": "hi"})
	completed.wait(t, conv)
	got := resubscribe(t, c, map[string][]string{"agents": {"nobody"}})
	if diff := cmp.Diff([]logLine{
		{Thread: conv, From: "api:user-operator", To: "echo", Type: "Echo", Slot: 0.0, Payload: "<Echo><Note>hi</Note></Echo>"},
		{Thread: conv, From: "echo", To: "api:user-operator", Type: "Echo", Slot: nil,
			Payload: "<Echo><Note>echo: hi</Note></Echo>"},
	}, lines(t, got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMessageLogSlowClient(t *testing.T) {
	f := prepareFixture(t, func(o *Options) { o.SendQueue = 4 })
	gate := make(chan struct{})
	f.beforeServe = func(s *Server) { s.writeGate = gate } // a socket writes only what the test lets through
	f.start(f.opts)
	c := f.dial("/api/v1/ws/messages", f.loginAs("lou", auth.Viewer))
	writeFrame(t, c, frame{"cmd": "subscribe", "filter": map[string][]string{}})
	gate <- struct{}{} // the answer
	if got := readFrame(t, c); got["event"] != "subscribed" {
		t.Fatalf("subscribe: %v", got)
	}
	for _, name := range []string{"A", "B", "C"} { // 9 messages: 1 at the gate, 8 > 4 queued
		converse(t, f.org.Pump, name)
	}
	ce := closeError(t, c)
	if ce.Code != closeTryAgainLater || ce.Text != "Client too slow" {
		t.Errorf("closed with %d %q, want 1013 %q", ce.Code, ce.Text, "Client too slow")
	}
	converse(t, f.org.Pump, "Fast")
}
