package organism

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestReplayInjectMapsPrefixedThread: a later recorded input naming a
// thread the replay knows under another id (one the recording's organism
// created) re-enters the replay's thread whatever the envelope's form —
// the Go form (<thread>) and the Python form (<ns0:thread>), as journaled.
// The recorded ids never appear in the replay: the fresh organism has its
// own.
func TestReplayInjectMapsPrefixedThread(t *testing.T) {
	tests := []struct {
		name string
		env  func(thread string) []byte
	}{
		{"go form", func(thread string) []byte {
			return stage.AppendEnvelope(nil, "console", "greeter", thread, []byte(`<Greeting xmlns=""><Name>Eve</Name></Greeting>`))
		}},
		{"python form", func(thread string) []byte { return pythonEnvelope(thread, "Eve") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			capture := &replayJournal{}
			o, err := New(helloConfig(t, nil), Options{Logger: slog.New(slog.DiscardHandler), Journal: capture})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Start(); err != nil {
				t.Fatal(err)
			}
			defer shutdown(t, o)
			live := converse(t, o, "Dan")
			recordedThread := stage.NewThreadID()
			r := &replayRun{o: o, capture: capture, threads: map[string]string{recordedThread: live},
				convs: map[string]bool{}}
			in := store.Entry{Seq: 5, Direction: store.Inbound, Kind: store.Message, From: "console", To: "greeter",
				Thread: recordedThread, Conversation: recordedThread, PayloadTag: "Greeting", Bytes: tt.env(recordedThread)}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep := &ReplayReport{}
			if err := r.inject(ctx, []store.Entry{in}, rep, nil); err != nil {
				t.Fatal(err)
			}
			if len(rep.Inputs) != 1 || rep.Inputs[0].Rejected != "" {
				t.Fatalf("inputs %+v; want one accepted", rep.Inputs)
			}
			convs := make([]string, 0, len(r.convs))
			for c := range r.convs {
				convs = append(convs, c)
			}
			if !slices.Equal(convs, []string{live}) {
				t.Fatalf("the input re-entered conversations %v; want the replay's %s (recorded id %s)",
					convs, live, recordedThread)
			}
		})
	}
}

// TestRethread: only the first thread element naming the id changes, in
// either form; other envelopes are returned as they are.
func TestRethread(t *testing.T) {
	const from, to = "1ff51c45-b031-4be1-ace1-89261e6ef301", "22020444-98d1-4200-ab75-38ed8e3126ac"
	tests := []struct{ name, env, want string }{
		{"go form", `<message><meta><thread>` + from + `</thread></meta><P><thread>` + from + `</thread></P></message>`,
			`<message><meta><thread>` + to + `</thread></meta><P><thread>` + from + `</thread></P></message>`},
		{"python form", `<ns0:message><ns0:meta><ns0:thread>` + from + `</ns0:thread></ns0:meta><P/></ns0:message>`,
			`<ns0:message><ns0:meta><ns0:thread>` + to + `</ns0:thread></ns0:meta><P/></ns0:message>`},
		{"another thread", `<message><meta><thread>` + to + `</thread></meta><P/></message>`,
			`<message><meta><thread>` + to + `</thread></meta><P/></message>`},
		{"not an envelope", `<P>` + from + `</P>`, `<P>` + from + `</P>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(rethread([]byte(tt.env), from, to)); got != tt.want {
				t.Errorf("rethread(%s) = %s; want %s", tt.env, got, tt.want)
			}
		})
	}
}
