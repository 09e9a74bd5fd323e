package pump_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// syncBuffer is a log sink the pump's goroutines write to while a test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnroutedAnswerReachesTheCaller: a listener without an error handler
// whose answer no listener takes — raw output of a root tag nobody
// registered (a WASM guest without a response contract), a Send to a name
// nobody has — cannot be told so; its caller gets a <huh> naming the
// answer's tag and the listener, rather than a conversation that ends
// without an answer, and the log says which listener, tag and thread.
func TestUnroutedAnswerReachesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp xmlpipe.Response
		want string
	}{
		{"raw output of a tag nobody takes", xmlpipe.Raw([]byte("<CalcResult><Value>42</Value></CalcResult>")),
			"Answer <CalcResult> from calc has no route"},
		{"a send to a name nobody has", xmlpipe.Send("nobody", &Pong{Text: "x"}),
			"Answer <Pong> from calc has no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			calc := listenerOf(t, "calc", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return tc.resp, nil
			})
			p := startPump(t, pump.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, calc)
			out := newRecorder()
			thread := mustSend(t, p, client, "calc", &Ping{Text: "2+40"}, out)
			e := out.waitFor(t, "huh", kind(pump.EventHuh))
			got := []string{e.Error, e.From, e.To}
			if diff := cmp.Diff([]string{tc.want, "core", client}, got); diff != "" {
				t.Errorf("huh error, from, to (-want +got):\n%s", diff)
			}
			if !errors.Is(e.Cause, failure.ErrNoRoute) {
				t.Errorf("huh cause %v does not wrap failure.ErrNoRoute", e.Cause)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			tag := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(tc.want)[1], "<"), ">")
			var line string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "No listener for") {
					line = l
				}
			}
			for _, want := range []string{"listener=calc", "tag=" + tag, "thread=" + thread,
				"No listener for: " + strings.ToLower(tag)} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q lacks %q; log:\n%s", line, want, logs)
				}
			}
		})
	}
}

// TestUnroutedAnswerReachesTheCallingListener: the caller of such a
// listener that is itself a listener hears the <huh> in its error handler.
func TestUnroutedAnswerReachesTheCallingListener(t *testing.T) {
	huhs := make(chan string, 1)
	asker := listenerOf(t, "asker", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("calc", &Job{Label: "2+40"}), nil
	})
	asker = withErrorHandler(asker, func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if de.Huh != nil {
			huhs <- de.Huh.Error
		}
		return xmlpipe.Respond(&Ping{Text: "asker heard"}), nil
	})
	calc := listenerOf(t, "calc", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw([]byte("<CalcResult><Value>42</Value></CalcResult>")), nil
	})
	p := startPump(t, pump.Options{}, asker, calc)
	out := newRecorder()
	mustSend(t, p, client, "asker", &Ping{Text: "go"}, out)
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	if r, ok := reply.Payload.(*Ping); !ok || r.Text != "asker heard" {
		t.Errorf("reply %#v, want the asker's answer after the huh", reply.Payload)
	}
	if diff := cmp.Diff("Answer <CalcResult> from calc has no route", <-huhs); diff != "" {
		t.Errorf("the asker's huh (-want +got):\n%s", diff)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
}

// TestUnroutedAnswerUnderAProfile: a profiled caller is told the answer has
// no route whether the tag's listener is outside its profile or absent —
// the same <huh>, which names no listener outside the profile.
func TestUnroutedAnswerUnderAProfile(t *testing.T) {
	calc := func() pump.Listener {
		return listenerOf(t, "calc", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Raw([]byte(`<Pong><Text>42</Text></Pong>`)), nil
		})
	}
	defs := []pump.ProfileDef{{Name: "calc-only", Listeners: []string{"calc"}}}
	pr := newProbe()
	masked := profiled(t, defs, calc(), sink[Pong](t, "secret-printer", pr))
	absent := profiled(t, defs, calc())
	told := func(p *pump.Pump) []string {
		t.Helper()
		out := newRecorder()
		raw := envelope(client, "calc", stage.NewThreadID(), `<Ping xmlns=""><Text>2+40</Text></Ping>`)
		if _, err := p.InjectWait(pump.WithProfile(waitCtx(t), "calc-only"), raw, out); err != nil {
			t.Fatal(err)
		}
		e := out.waitFor(t, "huh", kind(pump.EventHuh))
		out.waitFor(t, "completion", kind(pump.EventComplete))
		return []string{string(e.Kind), e.From, e.To, e.Error}
	}
	got, want := told(masked), told(absent)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("masked listener's tag told as (-absent +masked):\n%s", diff)
	}
	if diff := cmp.Diff("Answer <Pong> from calc has no route", got[3]); diff != "" {
		t.Errorf("huh (-want +got):\n%s", diff)
	}
	if n := len(pr.all()); n != 0 {
		t.Errorf("the listener outside the profile handled %d messages", n)
	}
}

// TestUnroutedPartsToldOnce: raw output of several parts no listener
// takes gives its caller one <huh> naming them all (each tag once, in
// order), not one per part; the log has one "No listener for" line per
// tag and no "message rejected" line beside it.
func TestUnroutedPartsToldOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resp      xmlpipe.Response
		want      string
		tags      []string
		rejectLog int
	}{
		{"raw output of three parts, two tags", xmlpipe.Raw([]byte(
			"<CalcResult><Value>42</Value></CalcResult><CalcNote>n</CalcNote><CalcResult><Value>7</Value></CalcResult>")),
			"Answers <CalcResult>, <CalcNote> from calc have no route", []string{"calcresult", "calcnote"}, 0},
		{"a send to a name nobody has", xmlpipe.Send("nobody", &Pong{Text: "x"}),
			"Answer <Pong> from calc has no route", []string{"pong"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			calc := listenerOf(t, "calc", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return tc.resp, nil
			})
			p := startPump(t, pump.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, calc)
			out := newRecorder()
			mustSend(t, p, client, "calc", &Ping{Text: "2+40"}, out)
			waitLong(t, out, "completion", kind(pump.EventComplete))
			var got []string
			for _, e := range out.snapshot() {
				if e.Kind == pump.EventHuh {
					got = append(got, e.Error)
				}
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("the client's <huh>s (-want +got):\n%s", diff)
			}
			var noListener []string
			rejected := 0
			for _, l := range strings.Split(logs.String(), "\n") {
				if _, tag, ok := strings.Cut(l, `msg="No listener for: `); ok {
					noListener = append(noListener, strings.TrimSuffix(strings.Fields(tag)[0], `"`))
				}
				if strings.Contains(l, `msg="message rejected"`) {
					rejected++
				}
			}
			if diff := cmp.Diff(tc.tags, noListener); diff != "" {
				t.Errorf("\"No listener for\" lines (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
			if rejected != tc.rejectLog {
				t.Errorf("%d \"message rejected\" lines beside them, want %d; log:\n%s", rejected, tc.rejectLog, logs)
			}
		})
	}
}
