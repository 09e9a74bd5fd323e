package bus

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

func TestSurrogatesPaired(t *testing.T) {
	tests := []struct {
		name, json string
		want       bool
	}{
		{"no escapes", `{"a":"b"}`, true},
		{"plain escape", `{"a":"\u00e9\n"}`, true},
		{"pair", `{"a":"\ud83d\ude00"}`, true},
		{"pair, upper case", `{"a":"\uD83D\uDE00"}`, true},
		{"high alone", `{"a":"\ud800"}`, false},
		{"high then text", `{"a":"\ud800x"}`, false},
		{"high then high", `{"a":"\ud800\ud800"}`, false},
		{"low alone", `{"a":"\udc00"}`, false},
		{"low then high", `{"a":"\udc00\ud800"}`, false},
		{"escaped backslash", `{"a":"\\ud800"}`, true},
		{"escaped backslash, then lone", `{"a":"\\\ud800"}`, false},
		{"truncated escape", `{"a":"\ud8`, true}, // the JSON decoder refuses it
		{"high at the end", `"\ud800`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := surrogatesPaired([]byte(tt.json)); got != tt.want {
				t.Errorf("surrogatesPaired(%s) = %v, want %v", tt.json, got, tt.want)
			}
		})
	}
}

// TestRESTBodyLimits: an oversized body is 413, JSON that is not valid UTF-8
// (raw or through a lone surrogate escape) is 400 — never decoded into U+FFFD.
func TestRESTBodyLimits(t *testing.T) {
	f := newFixture(t)
	op := f.loginAs("ulla", auth.Operator)
	big := `{"to":"greeter","payload":{"name":"` + strings.Repeat("x", maxRequestBody) + `"}}`
	tooLarge := fmt.Sprintf("Request body too large: limit %d bytes", maxRequestBody)
	const badUTF8 = "Invalid JSON: not valid UTF-8"
	tests := []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"inject too large", "/api/v1/inject", op, big, http.StatusRequestEntityTooLarge, tooLarge},
		{"login too large", "/auth/login", "", big, http.StatusRequestEntityTooLarge, tooLarge},
		{"invalid UTF-8", "/api/v1/inject", op, "{\"to\":\"greeter\",\"payload\":{\"name\":\"D\xffn\"}}",
			http.StatusBadRequest, badUTF8},
		{"lone high surrogate", "/api/v1/inject", op, `{"to":"greeter","payload":{"name":"D\ud800n"}}`,
			http.StatusBadRequest, badUTF8},
		{"lone low surrogate in XML text", "/api/v1/inject", op,
			`{"to":"greeter","payload":"<Greeting><Name>\udc00</Name></Greeting>"}`, http.StatusBadRequest, badUTF8},
		{"login invalid UTF-8", "/auth/login", "", "{\"username\":\"\xc0\",\"password\":\"x\"}",
			http.StatusBadRequest, badUTF8},
		{"a surrogate pair is fine", "/api/v1/inject", op, `{"to":"greeter","payload":{"name":"D\ud83d\ude00n"}}`,
			http.StatusOK, ""},
		{"exactly the limit is read", "/api/v1/inject", op,
			`{"to":"greeter","payload":{"name":"` + strings.Repeat("x", maxRequestBody-40) + `"}}`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := f.do("POST", tt.path, tt.token, tt.body)
			if tt.status == 0 { // only: not refused for its size or encoding
				if status == http.StatusRequestEntityTooLarge || body["error"] == badUTF8 {
					t.Errorf("%d %v", status, body)
				}
				return
			}
			if status != tt.status || (tt.want != "" && body["error"] != tt.want) {
				t.Errorf("%d %v, want %d %q", status, body, tt.status, tt.want)
			}
		})
	}
}

// TestWSFrameLimits: an oversized frame closes every socket with 1009 and a
// reason, a text frame that is not UTF-8 with 1007; JSON escaping half a
// surrogate pair is an error frame.
func TestWSFrameLimits(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxFrameBytes = 1024 })
	token := f.loginAs("vera", auth.Operator)
	tooBig := "Message too big: limit 1024 bytes"
	tests := []struct {
		name, path string
		kind       int
		data       string
		code       int
		reason     string
	}{
		{"bus too big", "/bus", websocket.TextMessage, envelope("websocket:vera", "x", strings.Repeat("D", 2048)),
			websocket.CloseMessageTooBig, tooBig},
		{"ws too big", "/ws", websocket.TextMessage, `{"type":"send","raw":"@greeter ` + strings.Repeat("D", 2048) + `"}`,
			websocket.CloseMessageTooBig, tooBig},
		{"stream too big, binary", "/api/v1/ws", websocket.BinaryMessage, strings.Repeat(" ", 1025),
			websocket.CloseMessageTooBig, tooBig},
		{"bus invalid UTF-8", "/bus", websocket.TextMessage, "<message>\xff</message>",
			websocket.CloseInvalidFramePayloadData, ReasonInvalidUTF8},
		{"ws invalid UTF-8", "/ws", websocket.TextMessage, "{\"type\":\"ping\",\"x\":\"\xc3\"}",
			websocket.CloseInvalidFramePayloadData, ReasonInvalidUTF8},
		{"messages invalid UTF-8", "/api/v1/ws/messages", websocket.TextMessage, "\xed\xa0\x80",
			websocket.CloseInvalidFramePayloadData, ReasonInvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.dial(tt.path, token)
			if err := c.WriteMessage(tt.kind, []byte(tt.data)); err != nil {
				t.Fatal(err)
			}
			if ce := closeError(t, c); ce.Code != tt.code || ce.Text != tt.reason {
				t.Errorf("closed with %d %q, want %d %q", ce.Code, ce.Text, tt.code, tt.reason)
			}
		})
	}

	const badUTF8 = "Invalid JSON: not valid UTF-8"
	t.Run("ws JSON", func(t *testing.T) {
		c := f.dial("/ws", token)
		readFrame(t, c) // connected
		for _, bad := range []struct {
			kind int
			data string
		}{
			{websocket.TextMessage, `{"type":"send","raw":"@greeter D\ud800n"}`},
			{websocket.BinaryMessage, "{\"type\":\"send\",\"raw\":\"@greeter D\xffn\"}"},
		} {
			if err := c.WriteMessage(bad.kind, []byte(bad.data)); err != nil {
				t.Fatal(err)
			}
			wantError(badUTF8, "bad_request")(t, readFrame(t, c))
		}
	})
	t.Run("stream JSON", func(t *testing.T) {
		c := f.dial("/api/v1/ws", token)
		readFrame(t, c) // connected
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"cmd":"subscribe","agents":["\udfff"]}`)); err != nil {
			t.Fatal(err)
		}
		if got := readFrame(t, c); got["event"] != "error" || got["error"] != badUTF8 {
			t.Errorf("got %v, want the error %q", got, badUTF8)
		}
	})
	t.Run("message log JSON", func(t *testing.T) {
		c := f.dial("/api/v1/ws/messages", token)
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"cmd":"subscribe","filter":{"agents":["\ud800"]}}`)); err != nil {
			t.Fatal(err)
		}
		if got := readFrame(t, c); got["event"] != "error" || got["error"] != badUTF8 {
			t.Errorf("got %v, want the error %q", got, badUTF8)
		}
	})
}
