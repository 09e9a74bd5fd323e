package bus

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestWSSendStructured: a /ws send carries a structured payload the way the
// console line does — a JSON object or an XML element after "@target" in
// raw — or in "payload", as POST /api/v1/inject takes it.
func TestWSSendStructured(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("sam", auth.Operator)
	c := f.dial("/ws", token)
	readFrame(t, c)
	for _, tt := range []struct {
		name     string
		req      frame
		wantFrom string
	}{
		{"raw JSON object", frame{"type": "send", "raw": `@greeter {"Name": "Dan"}`}, "console:sam"},
		{"raw JSON object, loose names", frame{"type": "send", "raw": `@greeter {"name":"Dan"}`}, "console:sam"},
		{"raw XML", frame{"type": "send", "raw": "@greeter <Greeting><Name>Dan</Name></Greeting>"}, "console:sam"},
		{"payload object", frame{"type": "send", "target": "greeter", "payload": map[string]string{"name": "Dan"}}, "websocket:sam"},
		{"payload XML", frame{"type": "send", "target": "greeter", "payload": "<Greeting><Name>Dan</Name></Greeting>"}, "websocket:sam"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeFrame(t, c, tt.req)
			sent := readFrame(t, c)
			conv, _ := sent["thread_id"].(string)
			if sent["type"] != "sent" || sent["target"] != "greeter" {
				t.Fatalf("got %v, want sent", sent)
			}
			frames := conversation(t, c, conv)
			first := frame{"from": frames[0]["from"], "payload": frames[0]["payload"]}
			want := frame{"from": tt.wantFrom, "payload": "<Greeting><Name>Dan</Name></Greeting>"}
			if diff := cmp.Diff(want, first); diff != "" {
				t.Errorf("first message (-want +got):\n%s", diff)
			}
		})
	}
	for _, tt := range []struct {
		name       string
		req        frame
		want, code string
	}{
		{"raw invalid JSON", frame{"type": "send", "raw": `@greeter {"Name": `},
			"Invalid JSON payload: unexpected end of JSON input", "bad_payload"},
		{"raw JSON with trailing text", frame{"type": "send", "raw": `@greeter {"Name": "Dan"} x`},
			"Invalid JSON payload: invalid character 'x' after top-level value", "bad_payload"},
		{"raw JSON of unknown fields", frame{"type": "send", "raw": `@greeter {"Age": 3}`},
			"Invalid payload for greeter: unknown field \"Age\" (the fields are Name)", "bad_payload"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeFrame(t, c, tt.req)
			wantError(tt.want, tt.code)(t, readFrame(t, c))
		})
	}
}
