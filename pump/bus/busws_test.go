package bus

import (
	"encoding/base64"
	"encoding/xml"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// wireEnvelope is an envelope as a /bus client reads it.
type wireEnvelope struct {
	From    string `xml:"meta>from"`
	To      string `xml:"meta>to"`
	Thread  string `xml:"meta>thread"`
	Payload struct {
		XMLName  xml.Name
		Message  string `xml:"Message"`
		Error    string `xml:"error"`
		Original string `xml:"original-attempt"`
	} `xml:",any"`
}

// readEnvelope reads the next /bus frame.
func readEnvelope(t *testing.T, c *websocket.Conn) (wireEnvelope, string) {
	t.Helper()
	data := readMessage(t, c)
	var e wireEnvelope
	if err := xml.Unmarshal(data, &e); err != nil {
		t.Fatalf("envelope %q: %v", data, err)
	}
	return e, string(data)
}

func sendRaw(t *testing.T, c *websocket.Conn, s string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestBusEnvelopeAnswered(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("xena", auth.Operator)
	c := f.dial("/bus", token)

	tests := []struct {
		name, frame string
	}{
		{"canonical", envelope("websocket:xena", stage.NewThreadID(), "Dan")},
		// An invalid thread id is replaced by the pump: the responses still come back.
		{"thread replaced", envelope("websocket:xena", "not-a-uuid", "Dan")},
		// Repaired by the pump (unescaped &): not well-formed for a strict parser.
		{"repaired", strings.Replace(envelope("websocket:xena", stage.NewThreadID(), "Dan"), "Dan", "Dan & co", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sendRaw(t, c, tt.frame)
			greeting, _ := readEnvelope(t, c)
			if greeting.From != "greeter" || greeting.To != "shouter" || greeting.Payload.XMLName.Local != "GreetingResponse" {
				t.Fatalf("first response: %+v", greeting)
			}
			shout, raw := readEnvelope(t, c)
			want := "HELLO, DAN!"
			if tt.name == "repaired" {
				want = "HELLO, DAN & CO!"
			}
			if shout.From != "shouter" || shout.To != "response-handler" || shout.Payload.Message != want {
				t.Fatalf("second response: %+v\n%s", shout, raw)
			}
			if !stage.IsThreadID(shout.Thread) || !strings.HasPrefix(raw, `<message xmlns="`+stage.EnvelopeNS+`">`) {
				t.Errorf("envelope %s", raw)
			}
		})
	}
}

func TestBusMalformedFrame(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("yuri", auth.Operator)
	c := f.dial("/bus", token)
	tests := []struct {
		name, frame, want string
	}{
		{"not XML", "this is not xml", failure.HuhMalformed},
		{"not an envelope", "<Greeting><Name>Dan</Name></Greeting>", failure.HuhEnvelope},
		{"no such listener", strings.Replace(envelope("websocket:yuri", stage.NewThreadID(), "Dan"), "greeter", "nobody", 1),
			failure.HuhPayload},
		{"reserved sender", envelope("shouter", stage.NewThreadID(), "Dan"), failure.HuhEnvelope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sendRaw(t, c, tt.frame)
			huh, raw := readEnvelope(t, c)
			if huh.From != "core" || huh.Payload.XMLName.Space != "https://xml-pipeline.org/ns/core/v1" ||
				huh.Payload.XMLName.Local != "huh" || huh.Payload.Error != tt.want {
				t.Fatalf("got %s, want a <huh> %q", raw, tt.want)
			}
			orig, err := base64.StdEncoding.DecodeString(huh.Payload.Original)
			if err != nil || string(orig) != tt.frame {
				t.Errorf("original-attempt %q (%v)", orig, err)
			}
		})
	}
}

func TestBusPrivilegedDropped(t *testing.T) {
	f := newFixture(t)
	token := f.loginAs("zed", auth.Operator)
	c := f.dial("/bus", token)
	const pm = `<privileged-msg xmlns="https://xml-pipeline.org/privileged-msg"><shutdown/></privileged-msg>`
	thread := stage.NewThreadID()
	tests := []struct{ name, frame string }{
		{"privileged root", pm},
		{"privileged payload", `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>x</from>` +
			`<thread>` + thread + `</thread></meta>` + pm + `</message>`},
		{"privileged root, repaired", `<privileged-msg xmlns="https://xml-pipeline.org/privileged-msg"><shutdown/>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.logs.mu.Lock()
			f.logs.list = nil
			f.logs.mu.Unlock()
			sendRaw(t, c, tt.frame)
			huh, raw := readEnvelope(t, c)
			if huh.Payload.XMLName.Local != "huh" || huh.Payload.Error != failure.HuhProcessing || huh.Payload.Original != "" {
				t.Fatalf("got %s, want a generic <huh> without the original", raw)
			}
			rec, ok := f.logs.find("security event: privileged message", "security", true)
			if !ok {
				t.Fatal("no security event logged")
			}
			if rec.Level != slog.LevelWarn {
				t.Errorf("security event at %v", rec.Level)
			}
		})
	}
}

func TestBusLegacyAuth(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AuthTimeout = 300 * time.Millisecond; o.LegacyTOTPLogin = true })
	secret := f.user("lena", auth.Operator)
	vicSecret := f.user("vic", auth.Viewer)
	tests := []struct {
		name   string
		first  func() string // nil: send nothing
		reason string
	}{
		{"not authenticate", func() string { return envelope("x", stage.NewThreadID(), "Dan") }, ReasonNotAuthenticate},
		{"missing code", func() string { return `<authenticate/>` }, ReasonMissingTOTP},
		{"wrong code", func() string { return `<authenticate totp="000000"/>` }, ReasonInvalidTOTP},
		{"tampered XML", func() string { return "authenticate totp=123456" }, ReasonBadXML},
		{"no element", func() string { return "\x00\x01<" }, ReasonBadXML},
		{"timeout", nil, ReasonAuthTimeout},
		{"viewer", func() string { f.nextStep(); return `<authenticate totp="` + f.code(vicSecret) + `"/>` }, ReasonForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := f.tryDial("/bus", nil, false)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tt.first != nil {
				sendRaw(t, c, tt.first())
			}
			ce := closeError(t, c)
			if ce.Code != websocket.ClosePolicyViolation || ce.Text != tt.reason {
				t.Errorf("closed with %d %q, want 1008 %q", ce.Code, ce.Text, tt.reason)
			}
		})
	}
	t.Run("valid code, repaired frame", func(t *testing.T) {
		c, _, err := f.tryDial("/bus", nil, false)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f.nextStep()
		sendRaw(t, c, `<authenticate totp="`+f.code(secret)+`">`) // unclosed: repaired
		sendRaw(t, c, envelope("websocket:lena", stage.NewThreadID(), "Lena"))
		if e, _ := readEnvelope(t, c); e.From != "greeter" {
			t.Errorf("first response %+v", e)
		}
	})
	t.Run("bad bearer token", func(t *testing.T) {
		_, resp, err := f.tryDial("/bus", http.Header{"Authorization": {"Bearer nope"}}, true)
		if err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("dial: %v", err)
		}
	})
	t.Run("viewer bearer token", func(t *testing.T) {
		token := f.login("vic", vicSecret)
		_, resp, err := f.tryDial("/bus", http.Header{"Authorization": {"Bearer " + token}}, true)
		if err == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("dial: %v", err)
		}
	})
}

func TestBusFrameTooLarge(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxFrameBytes = 1024 })
	token := f.loginAs("max", auth.Operator)
	c := f.dial("/bus", token)
	sendRaw(t, c, envelope("big", stage.NewThreadID(), strings.Repeat("D", 2048)))
	if ce := closeError(t, c); ce.Code != websocket.CloseMessageTooBig {
		t.Errorf("closed with %d %q, want 1009", ce.Code, ce.Text)
	}
}
