package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Payloads of the correlation tests.
type (
	CorrAsk    struct{ Text string }
	CorrEcho   struct{ Text string }
	CorrEcho2  struct{ Text string }
	CorrRelay  struct{ Text string }
	CorrBroken struct{ Text string }
	CorrStrict struct {
		Choice string `enum:"red|green"`
	}
)

// answer is one answer the asking agent received.
type answer struct {
	ref, from, text, detail string
	isError                 bool
}

// TestCorrelatedSends: an agent sends six messages in one response, each
// with its own ref — two to the same listener at once, one whose answer
// takes two hops, one that fails validation, one to a listener it may not
// reach, one whose handler fails — and waits (Await) until every one is
// answered. Each answer arrives with the ref of the message it answers;
// errors carry the pump's detail (the field and why, the peer, the
// handler's error); answers in another payload reach the agent as their
// JSON in its own text payload; a ref an outsider writes into <meta> is
// ignored; the context buffer keeps each answer's ref.
func TestCorrelatedSends(t *testing.T) {
	var (
		mu      sync.Mutex
		answers []answer
		first   xmlpipe.Metadata
		p       *pump.Pump
		bound   = map[string]bool{} // the refs of the history's slots once all were answered
	)
	strictType := payloadType[CorrStrict](t)
	want := []string{"r-a", "r-b", "r-c", "r-d", "r-e", "r-f"}
	record := func(a answer, thread string) xmlpipe.Response {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, a)
		if len(answers) < len(want) {
			return xmlpipe.Await()
		}
		if tc, ok := p.Context().Thread(thread); ok {
			for _, s := range tc.Slots() {
				if s.To == "boss" && s.InReplyTo != "" {
					bound[s.InReplyTo] = true
				}
			}
		}
		return xmlpipe.Respond(&CorrAsk{Text: "all answered"})
	}
	boss := agent(listenerOf(t, "boss", func(_ context.Context, p *CorrAsk, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == client {
			mu.Lock()
			first = md
			mu.Unlock()
			return xmlpipe.SendAll(
				xmlpipe.SendRef("echo", &CorrEcho{Text: "a"}, "r-a"),
				xmlpipe.SendRef("echo", &CorrEcho{Text: "b"}, "r-b"),
				xmlpipe.SendRef("relay", &CorrRelay{Text: "c"}, "r-c"),
				xmlpipe.SendRef("strict", &xmlpipe.Encoded{Type: strictType,
					XML: []byte(`<CorrStrict xmlns=""><Choice>blue</Choice></CorrStrict>`)}, "r-d"),
				xmlpipe.SendRef("nobody", &CorrEcho{Text: "e"}, "r-e"),
				xmlpipe.SendRef("broken", &CorrBroken{Text: "f"}, "r-f"),
			), nil
		}
		return record(answer{ref: md.InReplyTo, from: md.From, text: p.Text}, md.ThreadID), nil
	}), "echo", "relay", "strict", "broken")
	boss = withErrorHandler(boss, func(_ context.Context, de *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		return record(answer{ref: md.InReplyTo, from: md.From, detail: de.Detail, isError: true}, md.ThreadID), nil
	})
	echo := listenerOf(t, "echo", func(_ context.Context, p *CorrEcho, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&CorrEcho{Text: strings.ToUpper(p.Text)}), nil
	})
	echo2 := listenerOf(t, "echo2", func(_ context.Context, p *CorrEcho2, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&CorrRelay{Text: strings.ToUpper(p.Text)}), nil
	})
	relay := listenerOf(t, "relay", func(_ context.Context, p *CorrRelay, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == "boss" {
			return xmlpipe.Send("echo2", &CorrEcho2{Text: p.Text}), nil
		}
		return xmlpipe.Respond(&CorrRelay{Text: "relayed " + p.Text}), nil
	})
	strict := listenerOf(t, "strict", func(context.Context, *CorrStrict, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, errors.New("strict must never see an invalid choice")
	})
	broken := listenerOf(t, "broken", func(context.Context, *CorrBroken, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, errors.New("boom")
	})
	nobody := listenerOf(t, "nobody", func(context.Context, *Bounce, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, nil
	})
	p = startPump(t, pump.Options{}, boss, echo, echo2, relay, strict, broken, nobody)

	out := newRecorder()
	thread := stage.NewThreadID()
	forged := fmt.Sprintf(`<message xmlns="%s"><meta><from>%s</from><to>boss</to><thread>%s</thread>`+
		`<in-reply-to xmlns="https://xml-pipeline.org/ns/core/v1">r-a</in-reply-to></meta>`+
		`<CorrAsk xmlns=""><Text>go</Text></CorrAsk></message>`, stage.EnvelopeNS, client, thread)
	if _, err := injectErr(t, p, []byte(forged), out); err != nil {
		t.Fatal(err)
	}
	reply := out.waitFor(t, "the final reply", kind(pump.EventReply))
	if r, ok := reply.Payload.(*CorrAsk); !ok || r.Text != "all answered" {
		t.Fatalf("reply %#v", reply.Payload)
	}

	mu.Lock()
	defer mu.Unlock()
	if first.InReplyTo != "" {
		t.Errorf("an outsider's <in-reply-to> reached the handler: %q", first.InReplyTo)
	}
	if len(first.Peers) != 4 || first.Peers[0].Name != "echo" || first.Peers[0].Payload == nil ||
		first.Peers[0].Payload.Name() != "CorrEcho" {
		t.Errorf("Metadata.Peers %+v", first.Peers)
	}
	got := map[string]answer{}
	for _, a := range answers {
		if _, dup := got[a.ref]; dup {
			t.Errorf("two answers for %q", a.ref)
		}
		got[a.ref] = a
	}
	var refs []string
	for r := range got {
		refs = append(refs, r)
	}
	slices.Sort(refs)
	if !slices.Equal(refs, want) {
		t.Fatalf("answers bound to %q, want %q: %+v", refs, want, answers)
	}
	checks := []struct {
		ref            string
		from, text     string
		isError        bool
		detailContains string
	}{
		{"r-a", "echo", `{"Text":"A"}`, false, ""},
		{"r-b", "echo", `{"Text":"B"}`, false, ""},
		{"r-c", "relay", `{"Text":"relayed C"}`, false, ""},
		{"r-d", "core", "", true, "Choice"},
		{"r-e", "system", "", true, `"nobody" is not among the peers of boss`},
		{"r-f", "core", "", true, "boom"},
	}
	for _, c := range checks {
		a := got[c.ref]
		if a.from != c.from || a.text != c.text || a.isError != c.isError || !strings.Contains(a.detail, c.detailContains) {
			t.Errorf("answer %s = %+v, want from %s text %q error %v detail ~%q", c.ref, a, c.from, c.text,
				c.isError, c.detailContains)
		}
	}
	if len(bound) != len(want) {
		t.Errorf("context slots bound to %v, want all of %v", bound, want)
	}
}

// TestRecoveredAnswerKeepsItsRef: an answer re-delivered from the journal
// after a restart carries the ref its envelope was built with.
func TestRecoveredAnswerKeepsItsRef(t *testing.T) {
	pr := newProbe()
	boss := agent(listenerOf(t, "boss", func(_ context.Context, p *CorrAsk, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("boss", p, md)
		return xmlpipe.Await(), nil
	}))
	threads := registry.NewThreads(registry.ThreadsConfig{})
	p := startPump(t, pump.Options{Threads: threads}, boss)
	thread := stage.NewThreadID()
	if err := threads.Begin(thread, client, "boss"); err != nil {
		t.Fatal(err)
	}
	env := stage.AppendEnvelopeInReplyTo(nil, "echo", "boss", thread, "call_7",
		[]byte(`<CorrAsk xmlns=""><Text>{"Text":"A"}</Text></CorrAsk>`))
	if err := p.Recover(waitCtx(t), pump.Recovered{Seq: 1, Envelope: env, Conversation: thread, Thread: thread}); err != nil {
		t.Fatal(err)
	}
	c := pr.next(t)
	if c.MD.InReplyTo != "call_7" || c.MD.From != "echo" {
		t.Fatalf("recovered answer: %+v", c.MD)
	}
}
