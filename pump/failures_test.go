package pump_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestExternalRejections: every bad external message gets a <huh> with the
// canned text at its first failing stage (reference Q31 fixed), carrying the
// original bytes and nothing about the topology; it is never delivered and the
// pump keeps working.
func TestExternalRejections(t *testing.T) {
	tid := stage.NewThreadID()
	ping := `<Ping xmlns=""><Text>hi</Text></Ping>`
	tests := []struct {
		name     string
		raw      []byte
		wantErr  error
		wantText string
	}{
		{"empty frame", nil, failure.ErrEmpty, failure.HuhMalformed},
		{"too large", envelope(client, "echo", tid, `<Ping xmlns=""><Text>`+strings.Repeat("x", 4096)+`</Text></Ping>`),
			failure.ErrTooLarge, failure.HuhTooLarge},
		{"invalid UTF-8", append(envelope(client, "echo", tid, `<Ping xmlns=""><Text>`), "\xff</Text></Ping></message>"...),
			failure.ErrEncoding, failure.HuhMalformed},
		{"DOCTYPE", append([]byte(`<!DOCTYPE message [<!ENTITY x "y">]>`), envelope(client, "echo", tid, ping)...),
			failure.ErrDoctype, failure.HuhMalformed},
		{"not XML at all", []byte(`<not valid xml`), failure.ErrEnvelope, failure.HuhEnvelope},
		{"bare payload, no envelope", []byte(`<test/>`), failure.ErrEnvelope, failure.HuhEnvelope},
		{"a huh is not an envelope", []byte(`<huh xmlns="https://xml-pipeline.org/ns/core/v1"><error>x</error></huh>`),
			failure.ErrEnvelope, failure.HuhEnvelope},
		{"processing instruction as the only payload", envelope(client, "echo", tid, `<?xml-stylesheet href="x"?>`),
			failure.ErrNoPayload, failure.HuhEnvelope},
		{"two payloads", envelope(client, "echo", tid, ping+ping), failure.ErrMultiplePayloads, failure.HuhEnvelope},
		{"payload in the envelope namespace", envelope(client, "echo", tid, `<Ping><Text>hi</Text></Ping>`),
			failure.ErrPayloadNamespace, failure.HuhPayload},
		{"no such listener", envelope(client, "nobody", tid, ping), failure.ErrNoRoute, failure.HuhPayload},
		{"unknown root tag without to", envelope(client, "", tid, `<Nope xmlns=""/>`), failure.ErrNoRoute, failure.HuhPayload},
		{"root tag of another listener", envelope(client, "echo", tid, `<Pong xmlns=""><Text>x</Text></Pong>`),
			failure.ErrNoRoute, failure.HuhPayload},
		{"wrong schema: unknown child", envelope(client, "echo", tid, `<Ping xmlns=""><Bogus/></Ping>`),
			failure.ErrPayloadInvalid, failure.HuhPayload},
		{"wrong schema: missing child", envelope(client, "echo", tid, `<Ping xmlns=""/>`), failure.ErrPayloadInvalid, failure.HuhPayload},
		{"wrong schema: case differs", envelope(client, "echo", tid, `<ping xmlns=""><Text>hi</Text></ping>`),
			failure.ErrNoRoute, failure.HuhPayload},
		{"from system", envelope("system", "echo", tid, ping), failure.ErrForbiddenSender, failure.HuhEnvelope},
		{"from core", envelope("core", "echo", tid, ping), failure.ErrForbiddenSender, failure.HuhEnvelope},
		{"from SYSTEM", envelope(" SYSTEM ", "echo", tid, ping), failure.ErrForbiddenSender, failure.HuhEnvelope},
		{"from a listener's name", envelope("echo", "echo", tid, ping), failure.ErrForbiddenSender, failure.HuhEnvelope},
		{"from a listener's name in another case", envelope("Pong-Box", "echo", tid, ping), failure.ErrForbiddenSender, failure.HuhEnvelope},
		{"missing from", envelope("", "echo", tid, ping), failure.ErrEnvelope, failure.HuhEnvelope},
	}
	pr := newProbe()
	p := startPump(t, pump.Options{MaxBytes: 2048}, sink[Ping](t, "echo", pr), sink[Pong](t, "pong-box", pr))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := newRecorder()
			_, err := injectErr(t, p, tc.raw, out)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("InjectWait error %v, want %v", err, tc.wantErr)
			}
			if f := failureOf(err); f == nil || f.Canned() != tc.wantText {
				t.Errorf("failure %#v, want canned text %q", f, tc.wantText)
			}
			e := out.waitFor(t, "huh", kind(pump.EventHuh))
			huh, ok := e.Payload.(*xmlpipe.Huh)
			if !ok {
				t.Fatalf("huh event payload %T", e.Payload)
			}
			if e.Error != tc.wantText || huh.Error != tc.wantText {
				t.Errorf("huh text %q / %q, want %q", e.Error, huh.Error, tc.wantText)
			}
			if want := tc.raw[:min(len(tc.raw), stage.MaxOriginalAttempt)]; !bytes.Equal(huh.OriginalAttempt, want) {
				t.Errorf("original attempt %q, want the bytes sent", huh.OriginalAttempt)
			}
			for _, secret := range []string{"echo", "pong-box", "nobody", "schema", "listener"} {
				if strings.Contains(strings.ToLower(huh.Error), secret) {
					t.Errorf("huh text %q reveals %q", huh.Error, secret)
				}
			}
			if len(e.Diagnostics) == 0 {
				t.Error("no diagnostics for operators")
			}
		})
	}
	if calls := pr.all(); len(calls) != 0 {
		t.Errorf("rejected messages were delivered: %+v", calls)
	}
	out := newRecorder()
	mustSend(t, p, client, "echo", &Ping{Text: "still works"}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if calls := pr.all(); len(calls) != 1 || calls[0].Payload.(*Ping).Text != "still works" {
		t.Errorf("calls after the rejections: %+v", calls)
	}
}

// TestSystemListenersInternal: the organism's own system.* listeners are never
// reachable from outside (by name or by root tag), with the same canned text
// as any other unroutable message, but listeners reach them.
func TestSystemListenersInternal(t *testing.T) {
	pr := newProbe()
	p := newPump(t, pump.Options{})
	if err := p.RegisterSystem(sink[Job](t, "system.jobs", pr)); err != nil {
		t.Fatal(err)
	}
	if err := p.Register(listenerOf(t, "asker", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("system.jobs", &Job{Label: "from inside"}), nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	for _, to := range []string{"system.jobs", ""} {
		out := newRecorder()
		_, err := injectErr(t, p, envelope(client, to, stage.NewThreadID(), `<Job xmlns=""><Label>x</Label></Job>`), out)
		if f := failureOf(err); f == nil || !errors.Is(err, failure.ErrNoRoute) || f.Canned() != failure.HuhPayload {
			t.Errorf("to %q: InjectWait error %v, want a routing failure", to, err)
		}
		if e := out.waitFor(t, "huh", kind(pump.EventHuh)); e.Error != failure.HuhPayload {
			t.Errorf("to %q: huh %q", to, e.Error)
		}
	}
	if _, err := p.Resolve("system.jobs", "", "Job", true); !errors.Is(err, failure.ErrNoRoute) {
		t.Errorf("Resolve external = %v, want ErrNoRoute", err)
	}
	if names, err := p.Resolve("", "", "Job", false); err != nil || len(names) != 1 || names[0] != "system.jobs" {
		t.Errorf("Resolve internal = %v, %v", names, err)
	}
	out := newRecorder()
	mustSend(t, p, client, "asker", &Ping{}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if calls := pr.all(); len(calls) != 1 || calls[0].MD.From != "asker" {
		t.Errorf("system.jobs calls %+v, want one from asker", calls)
	}
	for from, want := range map[string]error{"system": failure.ErrForbiddenSender, "ASKER": failure.ErrForbiddenSender,
		"system.jobs": failure.ErrForbiddenSender, "visitor": nil} {
		if err := p.CheckSender(from); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("CheckSender(%q) = %v, want %v", from, err, want)
		}
	}
}

// TestForbiddenSenderSaysWhy: an Ask from one of the organism's own
// identities, or from a listener's name, is refused with a diagnostic
// saying which of the two it is.
func TestForbiddenSenderSaysWhy(t *testing.T) {
	p := startPump(t, pump.Options{}, sink[Ping](t, "App", newProbe()))
	for _, tt := range []struct{ from, want string }{
		{"core", `external <from> "core" is reserved for the organism`},
		{"app", `external <from> "app" is the name of listener "App": only it sends as "App"`},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		_, err := p.Ask(ctx, tt.from, "App", &Ping{Text: "hi"})
		cancel()
		f, ok := errors.AsType[*failure.Failure](err)
		if !ok || !errors.Is(err, failure.ErrForbiddenSender) {
			t.Fatalf("Ask from %q: %v, want a *failure.Failure wrapping ErrForbiddenSender", tt.from, err)
		}
		if diff := cmp.Diff([]failure.Diagnostic{{Stage: failure.StageExtract, Msg: tt.want}}, f.Diagnostics); diff != "" {
			t.Errorf("Ask from %q: diagnostics (-want +got):\n%s", tt.from, diff)
		}
	}
}

// TestNoTopologyLeak: "no such listener" and "wrong schema" read the same.
func TestNoTopologyLeak(t *testing.T) {
	p := startPump(t, pump.Options{}, sink[Ping](t, "echo", newProbe()))
	huhFor := func(raw []byte) pump.Event {
		out := newRecorder()
		injectErr(t, p, raw, out)
		return out.waitFor(t, "huh", kind(pump.EventHuh))
	}
	tid := stage.NewThreadID()
	noListener := huhFor(envelope(client, "nobody", tid, `<Ping xmlns=""><Text>x</Text></Ping>`))
	wrongSchema := huhFor(envelope(client, "echo", tid, `<Ping xmlns=""><Txt>x</Txt></Ping>`))
	if noListener.Error != wrongSchema.Error {
		t.Errorf("no such listener reads %q, wrong schema reads %q", noListener.Error, wrongSchema.Error)
	}
}

// TestPrivilegedRootDropped: a privileged message on the regular channel is a
// security event: dropped and logged, no <huh> (which would confirm anything).
func TestPrivilegedRootDropped(t *testing.T) {
	p := startPump(t, pump.Options{}, sink[Ping](t, "echo", newProbe()))
	events := newRecorder()
	p.Subscribe(events)
	out := newRecorder()
	_, err := injectErr(t, p, []byte(`<shutdown xmlns="https://xml-pipeline.org/privileged-msg"/>`), out)
	if !errors.Is(err, failure.ErrPrivileged) {
		t.Fatalf("InjectWait error %v, want ErrPrivileged", err)
	}
	events.waitFor(t, "dead letter", kind(pump.EventDeadLetter))
	if n := len(out.snapshot()); n != 0 {
		t.Errorf("the sender got %d events, want none", n)
	}
}

// TestHandlerFailures: a handler error or panic becomes a <huh> to the sender —
// the external outlet, or the sending listener's ErrorHandler on that
// listener's own thread (reference Q8 fixed) — and the pump keeps working.
func TestHandlerFailures(t *testing.T) {
	failures := []struct {
		name string
		fail func() (xmlpipe.Response, error)
	}{
		{"error", func() (xmlpipe.Response, error) { return nil, errors.New(`db <down> & "out"`) }},
		{"panic", func() (xmlpipe.Response, error) { panic(`boom <b> & "c"`) }},
		{"panic with an error", func() (xmlpipe.Response, error) { panic(fmt.Errorf("wrapped: %w", context.Canceled)) }},
		{"nil payload", func() (xmlpipe.Response, error) { return xmlpipe.Respond(nil), nil }},
		{"unencodable payload", func() (xmlpipe.Response, error) { return xmlpipe.Send("x", map[string]int{}), nil }},
		{"send to no one", func() (xmlpipe.Response, error) { return xmlpipe.Send("", &Ping{Text: "x"}), nil }},
		{"send to a blank name", func() (xmlpipe.Response, error) { return xmlpipe.Send(" \t", &Ping{Text: "x"}), nil }},
	}
	for _, f := range failures {
		flaky := func(_ context.Context, in *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			if in.Text == "fail" {
				return f.fail()
			}
			return xmlpipe.Respond(&Pong{Text: "ok"}), nil
		}
		t.Run(f.name+" to the external sender", func(t *testing.T) {
			p := startPump(t, pump.Options{}, listenerOf(t, "flaky", flaky))
			out := newRecorder()
			mustSend(t, p, client, "flaky", &Pong{Text: "fail"}, out)
			e := out.waitFor(t, "huh", kind(pump.EventHuh))
			huh := e.Payload.(*xmlpipe.Huh)
			if e.Error != failure.HuhProcessing || huh.Error != failure.HuhProcessing || e.To != client || e.From != "core" {
				t.Errorf("huh %q from %s to %s, want %q from core to %s", e.Error, e.From, e.To, failure.HuhProcessing, client)
			}
			if !bytes.Contains(huh.OriginalAttempt, []byte("<Text>fail</Text>")) {
				t.Errorf("original attempt %q lacks the failed payload", huh.OriginalAttempt)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			again := newRecorder()
			mustSend(t, p, client, "flaky", &Pong{Text: "fine"}, again)
			if r := again.waitFor(t, "reply", kind(pump.EventReply)); r.Payload.(*Pong).Text != "ok" {
				t.Errorf("reply after the failure %#v", r.Payload)
			}
		})
		t.Run(f.name+" to the sending listener", func(t *testing.T) {
			var p *pump.Pump
			got := make(chan xmlpipe.Metadata, 2)
			huhs := make(chan *xmlpipe.Huh, 2)
			var callerThread string
			caller := listenerOf(t, "caller", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				callerThread = md.ThreadID
				return xmlpipe.Send("flaky", &Pong{Text: in.Text}), nil
			})
			caller = withErrorHandler(caller, func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				got <- md
				huhs <- de.Huh
				return xmlpipe.Respond(&Ping{Text: "caller recovered"}), nil
			})
			p = startPump(t, pump.Options{}, caller, listenerOf(t, "flaky", flaky))
			out := newRecorder()
			conv := mustSend(t, p, client, "caller", &Ping{Text: "fail"}, out)
			reply := out.waitFor(t, "reply", kind(pump.EventReply))
			if r, ok := reply.Payload.(*Ping); !ok || r.Text != "caller recovered" || reply.To != client {
				t.Errorf("reply %#v to %s, want the caller's recovery to %s", reply.Payload, reply.To, client)
			}
			md, huh := <-got, <-huhs
			if huh == nil || huh.Error != failure.HuhProcessing {
				t.Errorf("caller got huh %#v", huh)
			}
			if md.From != "core" || md.ThreadID != callerThread || md.ThreadID != conv {
				t.Errorf("huh from %q on %s, want from core on the caller's own thread %s", md.From, md.ThreadID, callerThread)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if n := out.count(kind(pump.EventHuh)); n != 0 {
				t.Errorf("the external sender got %d huhs; the failure was the caller's", n)
			}
		})
	}
}

// TestSendToNoOne: a handler that sends to an empty name (hello's shouter
// given an empty OriginalSender) fails like any handler: its sender gets a
// <huh> whose diagnostic says what is wrong, never the thread registry's
// refusal of an empty path segment as a dead letter.
func TestSendToNoOne(t *testing.T) {
	relay := func(_ context.Context, in *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send(in.Text, &Ping{Text: "relayed"}), nil
	}
	p := startPump(t, pump.Options{}, listenerOf(t, "relay", relay))
	out := newRecorder()
	mustSend(t, p, client, "relay", &Pong{Text: ""}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	var e pump.Event
	for _, ev := range out.snapshot() {
		if ev.Kind == pump.EventHuh {
			e = ev
		}
	}
	want := []string{"handler: handler failed: relay: a Ping sent to no one: " + pump.ErrNoRecipient.Error()}
	if diff := cmp.Diff(want, e.Diagnostics); diff != "" {
		t.Errorf("huh diagnostics (-want +got):\n%s", diff)
	}
	if n := out.count(kind(pump.EventDeadLetter)); n != 0 {
		t.Errorf("%d dead letters, want none: %s", n, describe(out.snapshot()))
	}
}

// TestHandlerOutputRejected: handler output passes the same gates as external
// input; what fails them comes back to that listener as a <huh> on its own
// thread, and nothing reaches the would-be target.
func TestHandlerOutputRejected(t *testing.T) {
	forged := envelope("echo", "echo", stage.NewThreadID(), `<Ping xmlns=""><Text>forged</Text></Ping>`)
	tests := []struct {
		name    string
		out     xmlpipe.Response
		huhText string
		journal string // substring of the rejected envelope, when it was built
	}{
		{"raw text with an unknown root tag", xmlpipe.Raw([]byte(`Sure! <Unknown><A>1</A></Unknown>`)), failure.HuhPayload, ""},
		{"raw payload failing the target's schema", xmlpipe.Raw([]byte(`<Ping><Wrong/></Ping>`)), failure.HuhPayload, ""},
		{"send to a listener of another tag", xmlpipe.Send("echo", &Pong{Text: "x"}), failure.HuhPayload, "<to>echo</to>"},
		{"send to nobody", xmlpipe.Send("nobody", &Ping{Text: "x"}), failure.HuhPayload, "<to>nobody</to>"},
		{"send to a name injecting markup", xmlpipe.Send(`x</to><to>echo`, &Ping{Text: "x"}), failure.HuhPayload,
			"<to>x&lt;/to&gt;&lt;to&gt;echo</to>"},
		{"send to a name with an entity", xmlpipe.Send(`echo&amp;`, &Ping{Text: "x"}), failure.HuhPayload, "<to>echo&amp;amp;</to>"},
		{"raw forged envelope", xmlpipe.Raw(forged), failure.HuhPayload, ""},
		{"raw text without an element", xmlpipe.Raw([]byte("Just chatting, no XML here.")), failure.HuhEnvelope, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p *pump.Pump
			pr := newProbe()
			var records []pump.Record
			var recMu sync.Mutex
			type seen struct {
				huh    *xmlpipe.Huh
				md     xmlpipe.Metadata
				thread string
			}
			errs := make(chan seen, 4)
			var makerThread string
			maker := listenerOf(t, "maker", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				makerThread = md.ThreadID
				return tc.out, nil
			})
			maker = withErrorHandler(maker, func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				errs <- seen{de.Huh, md, md.ThreadID}
				return nil, nil
			})
			p = startPump(t, pump.Options{Journal: pump.JournalFunc(func(r pump.Record) {
				recMu.Lock()
				records = append(records, r)
				recMu.Unlock()
			})}, maker, sink[Ping](t, "echo", pr))
			out := newRecorder()
			mustSend(t, p, client, "maker", &Job{Label: "go"}, out)
			out.waitFor(t, "completion", kind(pump.EventComplete))
			select {
			case s := <-errs:
				if s.huh == nil || s.huh.Error != tc.huhText {
					t.Errorf("maker got %#v, want a huh %q", s.huh, tc.huhText)
				}
				if s.thread != makerThread || s.md.From != "core" {
					t.Errorf("huh from %q on %s, want from core on maker's thread %s", s.md.From, s.thread, makerThread)
				}
			default:
				t.Fatal("maker's ErrorHandler was not called")
			}
			if calls := pr.all(); len(calls) != 0 {
				t.Errorf("rejected output delivered: %+v", calls)
			}
			if n := out.count(kind(pump.EventHuh)); n != 0 {
				t.Errorf("the external sender got %d huhs for maker's bad output", n)
			}
			if tc.journal == "" {
				return
			}
			recMu.Lock()
			defer recMu.Unlock()
			for _, r := range records {
				if r.Kind == pump.RecordHuh && r.From == "maker" {
					if !bytes.Contains(r.Envelope, []byte(tc.journal)) {
						t.Errorf("rejected envelope %s lacks %s", r.Envelope, tc.journal)
					}
					return
				}
			}
			t.Errorf("no huh record for maker's output; records: %+v", records)
		})
	}
}

// TestRawOutput: raw text is dummy-wrapped and repaired; each root element is
// its own message, routed by root tag, from the emitting listener (reference
// Q6 fixed).
func TestRawOutput(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []string // "listener:text" in any order
	}{
		{"one element", `<Ping><Text>1</Text></Ping>`, []string{"echo:1"}},
		{"elements among prose", `First <Ping><Text>1</Text></Ping>, then <Pong><Text>2</Text></Pong>. Done.`,
			[]string{"echo:1", "pong-box:2"}},
		{"same tag twice", `<Ping><Text>a</Text></Ping><Ping><Text>b</Text></Ping>`, []string{"echo:a", "echo:b"}},
		{"unclosed element repaired", `<Ping><Text>fixed</Text>`, []string{"echo:fixed"}},
		{"escaped text", `<Ping><Text>a &lt;b&gt; &amp; c</Text></Ping>`, []string{"echo:a <b> & c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr := newProbe()
			// Receivers end their thread only once every expected message has
			// arrived: messages one handler emits to the same listener share a
			// thread (the registry memoises one live child per hop), so an
			// early nil would end it under the next one.
			var arrived atomic.Int32
			all := newGate()
			receive := func(listener, text string, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				pr.record(listener, text, md)
				if arrived.Add(1) == int32(len(tc.want)) {
					all.open()
				}
				all.wait(t.Context())
				return nil, nil
			}
			emitter := listenerOf(t, "emitter", func(context.Context, *Job, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Raw([]byte(tc.raw)), nil
			})
			echo := listenerOf(t, "echo", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				return receive("echo", in.Text, md)
			})
			pong := listenerOf(t, "pong-box", func(_ context.Context, in *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				return receive("pong-box", in.Text, md)
			})
			p := startPump(t, pump.Options{}, emitter, echo, pong)
			out := newRecorder()
			mustSend(t, p, client, "emitter", &Job{}, out)
			out.waitFor(t, "completion", kind(pump.EventComplete))
			got := map[string]int{}
			for _, c := range pr.all() {
				if c.MD.From != "emitter" {
					t.Errorf("%s got a message from %q, want emitter", c.Listener, c.MD.From)
				}
				got[c.Listener+":"+c.Payload.(string)]++
			}
			want := map[string]int{}
			for _, w := range tc.want {
				want[w]++
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEscaping: names and text carrying markup characters travel as data, never
// as markup (reference Q11), and empty or self-closing payloads survive the
// envelope (reference Q12).
func TestEscaping(t *testing.T) {
	var p *pump.Pump
	pr := newProbe()
	echo := listenerOf(t, "echo", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("echo", in, md)
		return xmlpipe.Respond(&Ping{Text: in.Text}), nil
	})
	empty := listenerOf(t, "empty", func(_ context.Context, in *Empty, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("empty", in, md)
		if md.From == "maybe" {
			return xmlpipe.Respond(&Empty{}), nil
		}
		return xmlpipe.Send("maybe", &Maybe{}), nil
	})
	maybe := listenerOf(t, "maybe", func(_ context.Context, in *Maybe, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("maybe", in, md)
		return xmlpipe.Respond(&Empty{}), nil
	})
	p = startPump(t, pump.Options{}, echo, empty, maybe)

	t.Run("sender name and text with markup", func(t *testing.T) {
		from := `a<b>&c"d'e`
		text := `<x/> & ]]> "q" 'a' &amp;`
		out := newRecorder()
		mustSend(t, p, from, "echo", &Ping{Text: text}, out)
		reply := out.waitFor(t, "reply", kind(pump.EventReply))
		c := pr.next(t)
		if c.MD.From != from || c.Payload.(*Ping).Text != text {
			t.Errorf("echo got from %q text %q, want %q %q", c.MD.From, c.Payload.(*Ping).Text, from, text)
		}
		if reply.To != from || reply.Payload.(*Ping).Text != text {
			t.Errorf("reply to %q text %q", reply.To, reply.Payload.(*Ping).Text)
		}
		if !bytes.Contains(reply.Envelope, []byte("<to>a&lt;b&gt;&amp;c\"d'e</to>")) {
			t.Errorf("reply envelope %s does not carry the escaped name", reply.Envelope)
		}
	})
	t.Run("empty text element", func(t *testing.T) {
		out := newRecorder()
		injectErr(t, p, envelope(client, "echo", stage.NewThreadID(), `<Ping xmlns=""><Text/></Ping>`), out)
		reply := out.waitFor(t, "reply", kind(pump.EventReply))
		if got := reply.Payload.(*Ping).Text; got != "" {
			t.Errorf("text %q, want empty", got)
		}
		pr.next(t)
	})
	t.Run("self-closing payload root and empty payloads on every hop", func(t *testing.T) {
		out := newRecorder()
		if _, err := injectErr(t, p, envelope(client, "", stage.NewThreadID(), `<Empty xmlns=""/>`), out); err != nil {
			t.Fatal(err)
		}
		reply := out.waitFor(t, "reply", kind(pump.EventReply))
		if _, ok := reply.Payload.(*Empty); !ok {
			t.Errorf("reply payload %#v", reply.Payload)
		}
		if !bytes.Contains(reply.Envelope, []byte(`<Empty xmlns=""></Empty></message>`)) {
			t.Errorf("reply envelope %s", reply.Envelope)
		}
		pr.next(t)
		if m := pr.next(t).Payload.(*Maybe); m.Note != nil || m.N != 0 {
			t.Errorf("maybe got %+v, want the zero value", m)
		}
		if c := pr.next(t); c.Listener != "empty" || c.MD.From != "maybe" {
			t.Errorf("third hop %s from %s, want empty from maybe", c.Listener, c.MD.From)
		}
	})
}

// TestRespondRejectedReachesResponder: a reply its caller does not take (the
// wrong payload type) is refused at ingress; the <huh> reaches the responder
// on the thread its handler ran on, which is still alive (the chain is
// pruned only when a reply is accepted), and the responder can answer again.
func TestRespondRejectedReachesResponder(t *testing.T) {
	pr := newProbe()
	asker := listenerOf(t, "asker", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == "maker" {
			pr.record("asker", in, md)
			return nil, nil
		}
		return xmlpipe.Send("maker", &Job{Label: "make"}), nil
	})
	type seen struct {
		huh    *xmlpipe.Huh
		thread string
	}
	huhs := make(chan seen, 1)
	var makerThread string
	maker := listenerOf(t, "maker", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		makerThread = md.ThreadID
		return xmlpipe.Respond(&Pong{Text: "asker takes Ping, not Pong"}), nil
	})
	maker = withErrorHandler(maker, func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		huhs <- seen{de.Huh, md.ThreadID}
		return xmlpipe.Respond(&Ping{Text: "second try"}), nil
	})
	p := startPump(t, pump.Options{}, asker, maker)
	out := newRecorder()
	mustSend(t, p, client, "asker", &Ping{Text: "go"}, out)
	select {
	case s := <-huhs:
		if s.huh == nil || s.huh.Error != failure.HuhPayload || s.thread != makerThread {
			t.Errorf("maker got %#v on %s, want a huh %q on its thread %s", s.huh, s.thread, failure.HuhPayload, makerThread)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the rejected reply's huh never reached maker")
	}
	if c := pr.next(t); c.Payload.(*Ping).Text != "second try" {
		t.Errorf("asker got %+v, want maker's second try", c.Payload)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if p.Threads().Known(makerThread) {
		t.Errorf("maker's thread %s still live after its accepted reply", makerThread)
	}
}

// TestRawWithoutElementDetail: raw output holding no XML element at all
// comes back to its producer with the reason in DeliveryError.Detail, as
// every other rejected output of a listener does, so an agent can correct
// itself.
func TestRawWithoutElementDetail(t *testing.T) {
	details := make(chan string, 1)
	prose := withErrorHandler(listenerOf(t, "prose", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw([]byte("Just prose, no element.")), nil
	}), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		details <- de.Detail
		return nil, nil
	})
	p := startPump(t, pump.Options{}, prose)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if _, err := p.Ask(ctx, client, "prose", &Ping{Text: "hi"}); !strings.Contains(fmt.Sprint(err), "no XML element in the output") {
		t.Errorf("Ask = %v, want an error naming the missing element", err)
	}
	select {
	case d := <-details:
		if diff := cmp.Diff("no payload element: no XML element in the output", d); diff != "" {
			t.Errorf("Detail (-want +got):\n%s", diff)
		}
	case <-ctx.Done():
		t.Fatal("the error handler was not called")
	}
}

// TestRawUnroutedDetail: an element of raw output that no listener takes
// comes back to its producer with the reason in DeliveryError.Detail.
func TestRawUnroutedDetail(t *testing.T) {
	details := make(chan string, 1)
	raw := withErrorHandler(listenerOf(t, "raw", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw([]byte(`<Nowhere><Text>x</Text></Nowhere>`)), nil
	}), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		details <- de.Detail
		return nil, nil
	})
	p := startPump(t, pump.Options{}, raw)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if _, err := p.Ask(ctx, client, "raw", &Ping{Text: "hi"}); !strings.Contains(fmt.Sprint(err), "<Nowhere>") {
		t.Errorf("Ask = %v, want an error naming the unrouted element", err)
	}
	select {
	case d := <-details:
		if !strings.Contains(d, "<Nowhere>") {
			t.Errorf("Detail %q does not name the unrouted element", d)
		}
	case <-ctx.Done():
		t.Fatal("the error handler was not called")
	}
}
