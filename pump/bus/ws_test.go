package bus

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// conversation reads frames until conv completes and returns them (the
// socket's own conversation only; everything else fails the test).
func conversation(t *testing.T, c *websocket.Conn, conv string) []frame {
	t.Helper()
	var got []frame
	for {
		f := readFrame(t, c)
		if f["thread_id"] != conv {
			t.Fatalf("frame of another conversation: %v", f)
		}
		got = append(got, f)
		if f["type"] == "complete" {
			return got
		}
	}
}

func TestWSSendGreeter(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("alice", auth.Operator)
	c := f.dial("/ws", token)
	if diff := cmp.Diff(frame{"type": "connected", "username": "alice", "role": "operator"}, readFrame(t, c)); diff != "" {
		t.Fatalf("connected (-want +got):\n%s", diff)
	}

	for _, req := range []frame{
		{"type": "send", "raw": "@greeter Dan", "id": 1.0},
		{"type": "send", "target": "greeter", "content": "Dan", "id": 2.0},
		{"type": "send", "target": "GREETER", "text": "Dan", "id": 3.0},
	} {
		writeFrame(t, c, req)
		sent := readFrame(t, c)
		conv, _ := sent["thread_id"].(string)
		if sent["type"] != "sent" || sent["target"] != "greeter" || sent["id"] != req["id"] || !stage.IsThreadID(conv) {
			t.Fatalf("%v: got %v, want sent", req, sent)
		}
		frames := conversation(t, c, conv)
		var kinds []string
		for _, fr := range frames {
			kinds = append(kinds, fr["type"].(string))
			if ts, _ := fr["timestamp"].(string); fr["type"] != "output" {
				if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
					t.Errorf("frame %v: timestamp: %v", fr, err)
				}
			}
		}
		if diff := cmp.Diff([]string{"message", "message", "message", "output", "complete"}, kinds); diff != "" {
			t.Fatalf("%v: frame types (-want +got):\n%s\n%v", req, diff, frames)
		}
		wantFrom := "websocket:alice"
		if req["raw"] != nil {
			wantFrom = "console:alice"
		}
		first := frames[0]
		if first["from"] != wantFrom || first["to"] != "greeter" || first["listener"] != "greeter" ||
			first["payload_type"] != "Greeting" || first["payload"] != "<Greeting><Name>Dan</Name></Greeting>" {
			t.Errorf("first message: %v", first)
		}
		if s := frames[2]; s["from"] != "shouter" || s["payload"] != "<ShoutedResponse><Message>HELLO, DAN!</Message></ShoutedResponse>" {
			t.Errorf("shouted message: %v", s)
		}
		ids := map[string]bool{}
		for _, fr := range frames {
			id, _ := fr["message_id"].(string)
			if len(id) != 64 || ids[id] {
				t.Errorf("frame %v: message_id %q is not a fresh SHA-256", fr, id)
			}
			ids[id] = true
		}
		out := maps.Clone(frames[3])
		delete(out, "message_id")
		if diff := cmp.Diff(frame{"type": "output", "thread_id": conv, "from": "shouter", "text": "HELLO, DAN!"}, out); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
		if n := f.srv.router.size(); n != 0 {
			t.Errorf("%d conversations still routed after their completion", n)
		}
	}
}

func TestWSCommands(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("vic", auth.Viewer)
	c := f.dial("/ws", token)
	readFrame(t, c) // connected
	f.waitJournal() // the boot conversation is journaled

	tests := []struct {
		name  string
		req   frame
		check func(t *testing.T, got frame)
	}{
		{"ping", frame{"type": "ping"}, func(t *testing.T, got frame) {
			if diff := cmp.Diff(frame{"type": "pong"}, got); diff != "" {
				t.Error(diff)
			}
		}},
		{"status", frame{"type": "status", "id": "s"}, func(t *testing.T, got frame) {
			if got["type"] != "status" || got["id"] != "s" || got["organism"] != "hello-world" || got["listeners"] != 10.0 {
				t.Errorf("got %v", got)
			}
			if _, ok := got["threads"].(float64); !ok {
				t.Errorf("threads: %v", got["threads"])
			}
		}},
		{"listeners", frame{"type": "targets"}, func(t *testing.T, got frame) {
			want := []any{"system.boot", "system.todo", "system.todo-complete", "core.request-schema", "core.request-example",
				"core.request-prompt", "core.list-capabilities", "greeter", "shouter", "response-handler"}
			if got["type"] != "listeners" || !cmp.Equal(want, got["listeners"]) {
				t.Errorf("got %v", got)
			}
			details := got["details"].([]any)
			if d := details[7].(map[string]any); d["name"] != "greeter" || d["agent"] != true || d["root_tag"] != "Greeting" {
				t.Errorf("greeter details: %v", d)
			}
		}},
		{"threads", frame{"type": "threads"}, func(t *testing.T, got frame) {
			ts, ok := got["threads"].([]any)
			if got["type"] != "threads" || !ok {
				t.Fatalf("got %v", got)
			}
			// The boot conversation is over: it shows from the journal, ended.
			var boot map[string]any
			for _, th := range ts {
				if th := th.(map[string]any); th["id"] == f.org.BootThread {
					boot = th
				}
			}
			if boot == nil || boot["ended"] != true || boot["slots"] != 1.0 {
				t.Errorf("boot conversation %v in %v", boot, ts)
			}
		}},
		{"monitor", frame{"type": "monitor", "prefix": "*"}, func(t *testing.T, got frame) {
			if _, ok := got["threads"].([]any); got["type"] != "monitor" || got["prefix"] != "*" || !ok {
				t.Errorf("got %v", got)
			}
		}},
		{"monitor without prefix", frame{"type": "monitor"}, wantError("Missing prefix", "bad_request")},
		{"viewer cannot send", frame{"type": "send", "raw": "@greeter Dan"},
			wantError("Forbidden: role viewer cannot send", "forbidden")},
		{"unknown type", frame{"type": "dance"}, wantError("Unknown message type: dance", "bad_request")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFrame(t, c, tt.req)
			tt.check(t, readFrame(t, c))
		})
	}
	t.Run("invalid JSON", func(t *testing.T) {
		if err := c.WriteMessage(websocket.TextMessage, []byte("{")); err != nil {
			t.Fatal(err)
		}
		wantError("Invalid JSON", "bad_request")(t, readFrame(t, c))
	})
}

func wantError(msg, code string) func(t *testing.T, got frame) {
	return func(t *testing.T, got frame) {
		t.Helper()
		if diff := cmp.Diff(frame{"type": "error", "error": msg, "code": code}, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

func TestWSSendErrors(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("olga", auth.Operator)
	c := f.dial("/ws", token)
	readFrame(t, c)
	tests := []struct {
		req        frame
		want, code string
	}{
		{frame{"type": "send", "raw": "   "}, "Empty message", "bad_request"},
		{frame{"type": "send", "raw": "hello"}, "No target specified. Use @target message format.", "bad_request"},
		{frame{"type": "send", "raw": "@greeter"}, "No target specified. Use @target message format.", "bad_request"},
		{frame{"type": "send", "content": "Dan"}, "Missing target", "bad_request"},
		{frame{"type": "send", "target": "greeter"}, "Missing content", "bad_request"},
		{frame{"type": "send", "raw": "@nobody hi"}, "Unknown target: nobody. Available: ['system.boot', 'system.todo', " +
			"'system.todo-complete', 'core.request-schema', 'core.request-example', 'core.request-prompt', " +
			"'core.list-capabilities', 'greeter', 'shouter', 'response-handler']", "unknown_target"},
		{frame{"type": "send", "raw": "@system.todo hi"}, "Cannot create payload for system.todo", "no_text_field"},
	}
	for _, tt := range tests {
		writeFrame(t, c, tt.req)
		wantError(tt.want, tt.code)(t, readFrame(t, c))
	}
	// A message the organism refuses at ingress: system listeners are not
	// reachable from outside.
	writeFrame(t, c, frame{"type": "send", "raw": "@system.todo-complete x"})
	got := readFrame(t, c)
	if got["type"] != "error" || got["code"] != "rejected" || got["error"] != failure.HuhPayload {
		t.Errorf("refused send: %v", got)
	}
}

func TestWSBrowserToken(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("bea", auth.Operator)
	c, resp, err := f.tryDial("/ws", http.Header{"Sec-WebSocket-Protocol": {"bearer, " + token}}, true)
	if err != nil {
		t.Fatalf("dial with the subprotocol token: %v", err)
	}
	defer c.Close()
	if c.Subprotocol() != "bearer" || resp.Header.Get("Sec-WebSocket-Protocol") != "bearer" {
		t.Errorf("selected subprotocol %q", c.Subprotocol())
	}
	if got := readFrame(t, c); got["username"] != "bea" {
		t.Errorf("connected: %v", got)
	}
	for _, h := range []http.Header{nil, {"Sec-WebSocket-Protocol": {"bearer"}}} {
		_, resp, err := f.tryDial("/ws", h, h != nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("dial with %v: %v", h, err)
		}
	}
	if _, resp, err := f.tryDial("/ws?token="+token, nil, false); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a query token is not accepted: %v", err)
	}
}

func TestInsecureDev(t *testing.T) {
	logs := &records{}
	f := &fixture{t: t, logs: logs}
	l := startOrganism(t, nil)
	f.local, f.org = l, l.Organism()
	f.start(Options{Insecure: true, Organism: f.org, Console: l, Logger: newLogger(logs)})
	if _, ok := logs.find("INSECURE DEV MODE", "security", true); !ok {
		t.Error("insecure mode was not logged loudly")
	}
	status, body, _ := f.do("GET", "/api/v1/organism", "", nil)
	if status != http.StatusOK || body["name"] != "hello-world" {
		t.Fatalf("organism: %d %v", status, body)
	}
	c, _, err := f.tryDial("/ws", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := readFrame(t, c); got["role"] != "admin" {
		t.Errorf("connected: %v", got)
	}
	writeFrame(t, c, frame{"type": "send", "raw": "@greeter Dev"})
	sent := readFrame(t, c)
	var out string
	for _, fr := range conversation(t, c, sent["thread_id"].(string)) {
		if fr["type"] == "output" {
			out = fr["text"].(string)
		}
	}
	if out != "HELLO, DEV!" {
		t.Errorf("output %q", out)
	}
	if !strings.HasPrefix(f.base, "http://") {
		t.Errorf("insecure base %s", f.base)
	}
}
