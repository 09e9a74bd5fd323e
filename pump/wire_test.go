package pump_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var (
	threadID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)
	attempt  = regexp.MustCompile(`<original-attempt>[^<]*</original-attempt>`)
)

// normalise replaces the parts of an envelope that differ between runs.
func normalise(b []byte) []byte {
	b = threadID.ReplaceAll(b, []byte("THREAD"))
	return attempt.ReplaceAll(b, []byte("<original-attempt>BASE64</original-attempt>"))
}

// TestWireForm pins the canonical envelopes the pump emits (DESIGN §2): a reply
// to an external sender with escaped names and text, the SystemError of a
// peer violation and the <huh> of a rejected output, as journaled.
func TestWireForm(t *testing.T) {
	var mu sync.Mutex
	var records []pump.Record
	journal := pump.JournalFunc(func(r pump.Record) {
		mu.Lock()
		records = append(records, r)
		mu.Unlock()
	})
	bot := agent(listenerOf(t, "bot", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		switch in.Text {
		case "stray":
			return xmlpipe.Send("echo", &Pong{Text: "not a peer"}), nil
		case "bad output":
			return xmlpipe.Raw([]byte(`<Unknown/>`)), nil
		}
		return xmlpipe.Respond(&Ping{Text: `a <b> & "c"`}), nil
	}))
	bot = withErrorHandler(bot, func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, nil
	})
	p := startPump(t, pump.Options{Journal: journal}, bot, sink[Pong](t, "echo", newProbe()))

	envelopeOf := func(text string, pick func(pump.Record, pump.Event) []byte) []byte {
		t.Helper()
		mu.Lock()
		records = nil
		mu.Unlock()
		out := newRecorder()
		mustSend(t, p, `user <1>`, "bot", &Ping{Text: text}, out)
		out.waitFor(t, "completion", kind(pump.EventComplete))
		var reply pump.Event
		for _, e := range out.snapshot() {
			if e.Kind == pump.EventReply {
				reply = e
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range records {
			if b := pick(r, reply); b != nil {
				return b
			}
		}
		t.Fatalf("no envelope for %q", text)
		return nil
	}
	tests := []struct {
		golden string
		text   string
		pick   func(pump.Record, pump.Event) []byte
	}{
		{"reply.xml", "hello", func(_ pump.Record, e pump.Event) []byte { return e.Envelope }},
		{"system-error.xml", "stray", func(r pump.Record, _ pump.Event) []byte {
			if r.Kind == pump.RecordSystemError {
				return r.Envelope
			}
			return nil
		}},
		{"huh.xml", "bad output", func(r pump.Record, _ pump.Event) []byte {
			if r.Kind == pump.RecordHuh && r.To == "bot" && r.From == "core" {
				return r.Envelope
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			got := normalise(envelopeOf(tc.text, tc.pick))
			path := filepath.Join("testdata", "wire", tc.golden)
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(bytes.TrimSuffix(want, []byte("\n"))), string(got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}
