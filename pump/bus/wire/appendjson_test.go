package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// appender is what the bus encodes without reflection.
type appender interface {
	AppendJSON(b []byte) []byte
}

// framesOf builds one frame of each hand-encoded type from the strings
// given, with ids and optional fields set or not.
func framesOf(s1, s2 string, id json.RawMessage, diags []string, n int) []appender {
	h := Head{Type: s1, ID: id}
	return []appender{
		Sent{Head: h, ThreadID: s2, Target: s1},
		Error{Head: h, Error: s2, Code: s1, Diagnostics: diags, RetryAfter: n},
		Error{Head: h, Error: s2},
		Message{Head: h, ThreadID: s1, From: s2, To: s1, Listener: s2, PayloadType: s1, Payload: s2, Timestamp: s1,
			MessageID: s2},
		Output{Head: h, ThreadID: s1, From: s2, Text: s2, MessageID: s1, Streamed: n%2 == 1},
		Reply{Head: h, ThreadID: s1, From: s2, To: s1, PayloadType: s2, Payload: s1, Text: s2, Timestamp: s1,
			MessageID: s2, Streamed: n%2 == 0},
		Failure{Head: h, ThreadID: s1, From: s2, To: s2, Error: s1, Diagnostics: diags, Timestamp: s2, MessageID: s1},
		Complete{Head: h, ThreadID: s1, Timestamp: s2, MessageID: s1},
		Delta{Head: h, ThreadID: s2, Agent: s1, Text: s2, End: n%2 == 1},
	}
}

// checkSame fails when a frame's AppendJSON differs from json.Marshal.
func checkSame(t *testing.T, f appender) {
	t.Helper()
	want, err := json.Marshal(f)
	if err != nil {
		t.Fatalf("json.Marshal(%#v): %v", f, err)
	}
	prefix := []byte("prefix:")
	got := f.AppendJSON(append([]byte(nil), prefix...))
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%T: AppendJSON overwrote the buffer it appends to: %q", f, got)
	}
	if got = got[len(prefix):]; !bytes.Equal(got, want) {
		t.Errorf("%T:\nAppendJSON  %s\njson.Marshal %s", f, got, want)
	}
}

func TestAppendJSONMatchesMarshal(t *testing.T) {
	strs := []struct{ name, s1, s2 string }{
		{"empty", "", ""},
		{"plain", "message", "6f1c2a3b-0000-4000-8000-000000000001"},
		{"xml payload", "payload", `<Greeting xmlns="urn:x"><Name>Dan &amp; "Eve"</Name></Greeting>`},
		{"controls", "a\x00b\x01\x1f\x7f", "tab\tnl\nreturn\rff\fbs\bquote\"backslash\\"},
		{"unicode", "héllo wörld ☃ 𝄞", "line\u2028sep\u2029para"},
		{"invalid utf-8", "bad\xffbyte\xc3", "\xe2\x82 cut \xed\xa0\x80 surrogate"},
		{"replacement char", "\ufffd literal", "ok"},
	}
	ids := []struct {
		name string
		id   json.RawMessage
	}{
		{"no id", nil},
		{"number", json.RawMessage(`42`)},
		{"string", json.RawMessage(`"c17"`)},
		{"spaced object", json.RawMessage(`{ "a" : [1, 2] }`)},
		{"html string", json.RawMessage(`"<b>&"`)},
		{"escaped string", json.RawMessage(`"a\u0041\n"`)},
	}
	diags := [][]string{nil, {}, {"payload line 1: <x> & y"}, {"a", "b\x01"}}
	for _, s := range strs {
		for _, id := range ids {
			for i, d := range diags {
				t.Run(s.name+"/"+id.name, func(t *testing.T) {
					for _, f := range framesOf(s.s1, s.s2, id.id, d, i) {
						checkSame(t, f)
					}
				})
			}
		}
	}
}

func FuzzFrameAppendJSON(f *testing.F) {
	f.Add("message", "<a>&amp;</a>", `7`, "diag", 1)
	f.Add("\x00\u2028", "\xff\xfe", `"x"`, "", 0)
	f.Add("", "", `{"a": 1}`, "\t", 3)
	f.Fuzz(func(t *testing.T, s1, s2, id, diag string, n int) {
		raw := json.RawMessage(id)
		if !json.Valid(raw) {
			raw = nil // ids come from decoded requests: always valid JSON
		}
		var diags []string
		if diag != "" {
			diags = []string{diag, s1}
		}
		for _, fr := range framesOf(s1, s2, raw, diags, n) {
			checkSame(t, fr)
		}
	})
}

// BenchmarkFrameEncode compares json.Marshal and AppendJSON on the frames
// of a @greeter conversation (a message frame with its payload, an output
// frame).
func BenchmarkFrameEncode(b *testing.B) {
	id := "7d3a0c1e9b8f4a6d2c5e8f1a3b6d9c0e7f2a5b8d1c4e7f0a3b6c9d2e5f8a1b4c"
	frames := []appender{
		Message{Head: Head{Type: TypeMessage}, ThreadID: "6f1c2a3b-0000-4000-8000-000000000001", From: "greeter",
			To: "shouter", Listener: "shouter", PayloadType: "GreetingResponse",
			Payload:   "<GreetingResponse><Message>Hello, Dan!</Message><Original>Dan</Original></GreetingResponse>",
			Timestamp: "2026-03-01T12:00:00.123456789Z", MessageID: id},
		Output{Head: Head{Type: TypeOutput}, ThreadID: "6f1c2a3b-0000-4000-8000-000000000001",
			From: "response-handler", Text: "HELLO, DAN!", MessageID: id},
	}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range frames {
				if _, err := json.Marshal(f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			for _, f := range frames {
				buf = f.AppendJSON(buf[:0])
			}
		}
	})
}
