package llm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// errorAbout is a step delivering a <huh> about the call ref, recorded
// first as the pump records it (when first).
func errorAbout(ref string) haltStep {
	return haltStep{name: "huh about " + ref, handle: func(ctx context.Context, r *loopRig, first bool) (xmlpipe.Response, error) {
		if first {
			recordError(r.t, r.cb, ref)
		}
		de := &xmlpipe.DeliveryError{Huh: &xmlpipe.Huh{Error: "no"}, Detail: "the peer is down"}
		return r.a.HandleError(ctx, de, xmlpipe.Metadata{ThreadID: "t", From: "core", OwnName: "mathbot",
			InReplyTo: ref, Peers: r.peers})
	}}
}

// TestInterruptedCallsAreSentAgain: a message handed to the agent again
// after the handling that recorded its model's calls was interrupted before
// their messages went out (a crash, an immediate shutdown: the pump does
// not record the message a second time) sends those calls again, exactly
// as recorded — same peers and refs — without asking the model; so the
// conversation goes on instead of waiting for answers to calls nobody got.
// A new message that finds the calls waiting sends nothing: they went out.
func TestInterruptedCallsAreSentAgain(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	callBoth := Reply{ToolCalls: []ToolCall{toolCall("c2", "calc_v2", `{"Expression":"6*7","Precision":0}`),
		toolCall("c3", "poet", `{"Text":"sun"}`), toolCall("c4", "nope", `{}`)}}
	cases := []struct {
		name    string
		replies []Reply
		// steps run in order, each handled for the first time; then again
		// is handled again without its slot (again: whether it is a
		// re-delivery of the last step, else a new message).
		steps []haltStep
		again haltStep
		// want is what the handling of again sends; asked how many model
		// calls were made in all.
		want  []string
		asked int
	}{
		{name: "the caller's message", replies: []Reply{callPoet},
			steps: []haltStep{message("console", "go", "")}, again: message("console", "go", ""),
			want: []string{"poet c1"}, asked: 1},
		{name: "a peer's answer", replies: []Reply{callPoet, callBoth},
			steps: []haltStep{message("console", "go", ""), message("poet", "a poem", "c1")},
			again: message("poet", "a poem", "c1"), want: []string{"calc.v2 c2", "poet c3"}, asked: 2},
		{name: "an error about a call", replies: []Reply{callPoet, callBoth},
			steps: []haltStep{message("console", "go", ""), errorAbout("c1")},
			again: errorAbout("c1"), want: []string{"calc.v2 c2", "poet c3"}, asked: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.replies...)
			var before []string
			for _, s := range tc.steps {
				resp, err := s.handle(context.Background(), r, true)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				before = sentTo(resp)
			}
			history := slotKinds(r.cb)
			resp, err := tc.again.handle(context.Background(), r, false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sentTo(resp)); diff != "" {
				t.Errorf("handled again, it sent (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, sentTo(resp)); diff != "" {
				t.Errorf("handled again, it sent other calls than the first time (-first +again):\n%s", diff)
			}
			if diff := cmp.Diff(history, slotKinds(r.cb)); diff != "" {
				t.Errorf("handling again changed the history (-before +after):\n%s", diff)
			}
			if n := len(r.model.requests()); n != tc.asked {
				t.Errorf("the model was asked %d times, want %d", n, tc.asked)
			}
		})
	}
	t.Run("a full history", func(t *testing.T) {
		// The answer reaches the agent though the pump could not record
		// it: the call went out, and is not made again.
		r := newLoopRig(t, callPoet)
		cb, err := registry.NewContextBuffer(registry.ContextConfig{MaxSlotsPerThread: 2})
		if err != nil {
			t.Fatal(err)
		}
		r.cb, r.a.History = cb, cb
		if got := sentTo(r.deliver("console", "go", "")); fmt.Sprint(got) != "[poet c1]" {
			t.Fatalf("first message sent %v", got)
		}
		resp, err := message("poet", "a poem", "c1").handle(context.Background(), r, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(sentTo(resp), "poet c1") {
			t.Errorf("the answer to a call in a full history made the call again: %v", sentTo(resp))
		}
	})
	t.Run("a new message", func(t *testing.T) {
		r := newLoopRig(t, callPoet)
		if got := sentTo(r.deliver("console", "go", "")); fmt.Sprint(got) != "[poet c1]" {
			t.Fatalf("first message sent %v", got)
		}
		resp := r.deliver("console", "and?", "")
		if _, ok := resp.(*xmlpipe.AwaitResponse); !ok {
			t.Errorf("a new message while the call waits: %T %v, want Await", resp, sentTo(resp))
		}
		if n := len(r.model.requests()); n != 1 {
			t.Errorf("the model was asked %d times, want 1", n)
		}
	})
}

// TestInterruptedAnswerIsGivenAgain: a message handed to the agent again
// after the handling that recorded its answer — the model's text, or a
// halt's reason — was interrupted before the answer went out gives that
// answer again without asking the model: a peer's answer handled again is
// not taken for a late one and ignored (the caller never got an answer),
// and a caller's message does not cost a second model call.
func TestInterruptedAnswerIsGivenAgain(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	cases := []struct {
		name          string
		replies       []Reply
		maxIterations int
		steps         []haltStep
		want          string
		asked         int
	}{
		{name: "the caller's message", replies: []Reply{{Content: "done"}},
			steps: []haltStep{message("console", "go", "")}, want: "done", asked: 1},
		{name: "a peer's answer", replies: []Reply{callPoet, {Content: "a poem"}},
			steps: []haltStep{message("console", "go", ""), message("poet", "drops", "c1")}, want: "a poem", asked: 2},
		{name: "an error about a call", replies: []Reply{callPoet, {Content: "no poem"}},
			steps: []haltStep{message("console", "go", ""), errorAbout("c1")}, want: "no poem", asked: 2},
		{name: "a halt", replies: []Reply{callPoet, {Content: "a poem"}}, maxIterations: 1,
			steps: []haltStep{message("console", "go", ""), message("poet", "drops", "c1")},
			want:  "[mathbot halted: max_iterations (1) reached in this turn]", asked: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.replies...)
			r.a.MaxIterations = tc.maxIterations
			var first xmlpipe.Response
			for _, s := range tc.steps {
				resp, err := s.handle(context.Background(), r, true)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				first = resp
			}
			if got := answerText(first); got != tc.want {
				t.Fatalf("first answer %q, want %q", got, tc.want)
			}
			history := slotKinds(r.cb)
			resp, err := tc.steps[len(tc.steps)-1].handle(context.Background(), r, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := answerText(resp); got != tc.want {
				t.Errorf("handled again, it answered %q, want %q", got, tc.want)
			}
			if diff := cmp.Diff(history, slotKinds(r.cb)); diff != "" {
				t.Errorf("handling again changed the history (-before +after):\n%s", diff)
			}
			if n := len(r.model.requests()); n != tc.asked {
				t.Errorf("the model was asked %d times, want %d", n, tc.asked)
			}
		})
	}
}

// restart is a crash and restart of the rig: a new context buffer holding
// the history as persisted (no decoded payloads), and a new agent over it
// — its AEIOU sessions gone — made as setup says (nil: as the rig makes
// it), asking the same model.
func (r *loopRig) restart(setup func(*loopRig)) {
	r.t.Helper()
	llm := r.a.LLM
	var slots []registry.Slot
	if tc, ok := r.cb.Thread("t"); ok {
		slots = tc.Slots()
	}
	for i := range slots {
		slots[i].Payload = nil
	}
	cb, err := registry.NewContextBuffer(registry.ContextConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cb.Restore(slots); err != nil {
		r.t.Fatal(err)
	}
	r.cb = cb
	r.a = r.agent()
	r.a.LLM = llm
	if setup != nil {
		setup(r)
	}
}

// underLoopControl runs the rig's agent under AEIOU loop control.
func underLoopControl(r *loopRig) {
	host, err := aeiou.New(aeiou.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		r.t.Fatal(err)
	}
	r.a.LoopControl = host
}

// inXMLMode runs the rig's agent in XML mode.
func inXMLMode(r *loopRig) { r.a.ToolCalling = XMLTools }

// TestInterruptedStepIsRedoneInEveryMode: the step a handling recorded —
// its answer, its messages to peers — and that never went out because the
// process died before the pump journaled it is given again as recorded when
// the message is handled again after the restart, under loop control and in
// XML mode as in plain native mode: the caller gets its answer, the peer
// its message, and the model is not asked again.
func TestInterruptedStepIsRedoneInEveryMode(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	cases := []struct {
		name    string
		setup   func(*loopRig)
		replies []Reply
		steps   []haltStep
		// want is the answer given again, or (sent) the messages sent again.
		want  string
		sent  []string
		asked int
	}{
		{name: "loop control, the caller's message", setup: underLoopControl,
			replies: []Reply{{Content: "done"}}, steps: []haltStep{message("console", "go", "")}, want: "done", asked: 1},
		{name: "loop control, a peer's answer", setup: underLoopControl,
			replies: []Reply{callPoet, {Content: "a poem"}},
			steps:   []haltStep{message("console", "go", ""), message("poet", "drops", "c1")}, want: "a poem", asked: 2},
		{name: "loop control, an error about a call", setup: underLoopControl,
			replies: []Reply{callPoet, {Content: "no poem"}},
			steps:   []haltStep{message("console", "go", ""), errorAbout("c1")}, want: "no poem", asked: 2},
		{name: "loop control, calls", setup: underLoopControl, replies: []Reply{callPoet},
			steps: []haltStep{message("console", "go", "")}, sent: []string{"poet c1"}, asked: 1},
		{name: "xml, the caller's message", setup: inXMLMode, replies: []Reply{{Content: "a <b>bold</b> answer"}},
			steps: []haltStep{message("console", "go", "")}, want: "a <b>bold</b> answer", asked: 1},
		{name: "xml, a peer's answer", setup: inXMLMode,
			replies: []Reply{{Content: "Asking. <PoetTask><Text>rain</Text></PoetTask>"}, {Content: "a poem"}},
			steps:   []haltStep{message("console", "go", ""), message("poet", "drops", "")}, want: "a poem", asked: 2},
		{name: "xml, messages to peers", setup: inXMLMode,
			replies: []Reply{{Content: "Asking. <PoetTask><Text>rain</Text></PoetTask>"}},
			steps:   []haltStep{message("console", "go", "")}, sent: []string{"<PoetTask><Text>rain</Text></PoetTask>"},
			asked: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.replies...)
			tc.setup(r)
			var first xmlpipe.Response
			for _, s := range tc.steps {
				resp, err := s.handle(context.Background(), r, true)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				first = resp
			}
			history := slotKinds(r.cb)
			r.restart(tc.setup)
			resp, err := tc.steps[len(tc.steps)-1].handle(context.Background(), r, false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sent != nil {
				if diff := cmp.Diff(tc.sent, rawSent(first)); diff != "" {
					t.Fatalf("first handling sent (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.sent, rawSent(resp)); diff != "" {
					t.Errorf("handled again, it sent (-want +got):\n%s", diff)
				}
			} else {
				if got := answerText(first); got != tc.want {
					t.Fatalf("first answer %q, want %q", got, tc.want)
				}
				if got := answerText(resp); got != tc.want {
					t.Errorf("handled again, it answered %q, want %q", got, tc.want)
				}
			}
			if diff := cmp.Diff(history, slotKinds(r.cb)); diff != "" {
				t.Errorf("handling again changed the history (-before +after):\n%s", diff)
			}
			if n := len(r.model.requests()); n != tc.asked {
				t.Errorf("the model was asked %d times, want %d", n, tc.asked)
			}
		})
	}
}

// rawSent is what a response sends: the peers and refs of a SendAll, the
// lines of a Raw (XML mode).
func rawSent(resp xmlpipe.Response) []string {
	if raw, ok := resp.(*xmlpipe.RawResponse); ok {
		return strings.Split(string(raw.Bytes), "\n")
	}
	return sentTo(resp)
}

// TestUnsentStepBeforeANewerMessage: a second message recorded after the
// agent's step — calls, an answer — that never went out (the process died
// before the pump journaled it) does not hide the step: the first message,
// handled again after the restart, sends the calls or gives the answer
// again as recorded, and the second, handled again, is handled as it was
// (it waits for the calls' answers; an answer's successor asks the model).
func TestUnsentStepBeforeANewerMessage(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	cases := []struct {
		name    string
		replies []Reply
		// handled says whether the second message was handled before the
		// crash (else it was only recorded).
		handled bool
		// first and second are what the messages handled again give: the
		// calls sent, or the answer; asked how many model calls were made
		// in all.
		first, second []string
		asked         int
	}{
		{name: "calls, the second message handled", replies: []Reply{callPoet}, handled: true,
			first: []string{"poet c1"}, second: []string{"await"}, asked: 1},
		{name: "calls, the second message only recorded", replies: []Reply{callPoet},
			first: []string{"poet c1"}, second: []string{"await"}, asked: 1},
		{name: "an answer, the second message only recorded", replies: []Reply{{Content: "one"}, {Content: "two"}},
			first: []string{"answer one"}, second: []string{"answer two"}, asked: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.replies...)
			first, second := message("console", "go", ""), message("console", "and then?", "")
			if _, err := first.handle(context.Background(), r, true); err != nil {
				t.Fatal(err)
			}
			if tc.handled {
				if resp, err := second.handle(context.Background(), r, true); err != nil {
					t.Fatal(err)
				} else if _, ok := resp.(*xmlpipe.AwaitResponse); !ok {
					t.Fatalf("the second message while the call waits: %T, want Await", resp)
				}
			} else {
				recordMessage(t, r, "console", "and then?")
			}
			r.restart(nil)
			var got [][]string
			for _, s := range []haltStep{first, second} {
				resp, err := s.handle(context.Background(), r, false)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, gave(resp))
			}
			if diff := cmp.Diff([][]string{tc.first, tc.second}, got); diff != "" {
				t.Errorf("the messages handled again gave (-want +got):\n%s", diff)
			}
			if n := len(r.model.requests()); n != tc.asked {
				t.Errorf("the model was asked %d times, want %d", n, tc.asked)
			}
		})
	}
}

// recordMessage records text from from in thread t's history as the pump
// does before the handler runs, without handing it to the agent.
func recordMessage(t *testing.T, r *loopRig, from, text string) {
	t.Helper()
	v, _ := stage.NewTextPayload(r.own.GoType(), text)
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: from, To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw}); err != nil {
		t.Fatal(err)
	}
}

// gave is what a response gives, in words: the calls sent, the answer, or
// await.
func gave(resp xmlpipe.Response) []string {
	switch resp.(type) {
	case *xmlpipe.AwaitResponse:
		return []string{"await"}
	case *xmlpipe.RespondResponse:
		return []string{"answer " + answerText(resp)}
	}
	return sentTo(resp)
}

// heldModel is a Chatter whose first model call waits until released; the
// handlings after it that begin meanwhile say so (ModelTraits, which a
// handling reads before it waits for the conversation's lock).
type heldModel struct {
	next             Chatter
	asked, release   chan struct{}
	began            chan struct{}
	calls, beginning atomic.Int32
}

func (m *heldModel) Chat(ctx context.Context, req Request) (Reply, error) {
	if m.calls.Add(1) == 1 {
		close(m.asked)
		<-m.release
	}
	return m.next.Chat(ctx, req)
}

func (m *heldModel) ModelTraits(string) ModelTraits {
	if m.calls.Load() == 1 && m.beginning.Add(1) == 1 {
		close(m.began)
	}
	return ModelTraits{}
}

// TestMessageDuringTheModelCallIsNotTheStepsOwn: a message that is not the
// caller's (here a peer's late answer to a call given up; a <huh> about
// an earlier message) reaching the conversation while the model is asked
// is recorded before the step the handling under way records; its own
// handling, which waited for that one, does not take the step for its own
// unsent one: the calls are not sent twice, the answer is not given twice.
func TestMessageDuringTheModelCallIsNotTheStepsOwn(t *testing.T) {
	cases := []struct {
		name  string
		reply Reply
		first []string
	}{
		{name: "calls", reply: Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}},
			first: []string{"poet c1"}},
		{name: "an answer", reply: Reply{Content: "the answer"}, first: []string{"answer the answer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, tc.reply)
			m := &heldModel{next: r.model, asked: make(chan struct{}), release: make(chan struct{}),
				began: make(chan struct{})}
			r.a.LLM = m
			first := make(chan xmlpipe.Response, 1)
			go func() {
				resp, err := message("console", "go", "").handle(context.Background(), r, true)
				if err != nil {
					t.Error(err)
				}
				first <- resp
			}()
			<-m.asked
			second := make(chan xmlpipe.Response, 1)
			go func() {
				resp, err := message("poet", "late", "c0").handle(context.Background(), r, true)
				if err != nil {
					t.Error(err)
				}
				second <- resp
			}()
			<-m.began
			close(m.release)
			got := [][]string{gave(<-first), gave(<-second)}
			if diff := cmp.Diff([][]string{tc.first, {"await"}}, got); diff != "" {
				t.Errorf("the handlings gave (-want +got):\n%s", diff)
			}
		})
	}
}

// journaled is what the pump puts in a handler's context (xmlpipe.SettleKey)
// for a journaled message: its seq (xmlpipe.MessageSeq); it ignores Settle.
type journaled struct{ seq int64 }

func (j journaled) Settle(bool)       {}
func (j journaled) MessageSeq() int64 { return j.seq }

// seqMessage is message for a message journaled at seq: its slot records
// the seq, and its handling is told it.
func seqMessage(from, text, ref string, seq int64) haltStep {
	return haltStep{name: fmt.Sprintf("%s:%s#%d", from, text, seq), handle: func(ctx context.Context, r *loopRig, first bool) (xmlpipe.Response, error) {
		v, _ := stage.NewTextPayload(r.own.GoType(), text)
		if first {
			recordSeqMessage(r, from, text, ref, seq)
		}
		return r.a.Handle(context.WithValue(ctx, xmlpipe.SettleKey{}, journaled{seq}), v,
			xmlpipe.Metadata{ThreadID: "t", From: from, OwnName: "mathbot", InReplyTo: ref, Peers: r.peers})
	}}
}

// recordSeqMessage records text from from (bound to ref), journaled at
// seq, in thread t's history as the pump does before the handler runs.
func recordSeqMessage(r *loopRig, from, text, ref string, seq int64) {
	r.t.Helper()
	v, _ := stage.NewTextPayload(r.own.GoType(), text)
	raw, err := r.own.AppendPayload(nil, v)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.cb.Append(registry.Slot{ThreadID: "t", From: from, To: "mathbot", PayloadType: r.own.Name(),
		Payload: v, Raw: raw, InReplyTo: ref, Seq: seq}); err != nil {
		r.t.Fatal(err)
	}
}

// duringChat is a Chatter that runs during before its first model call
// answers: a message the pump records while the model is asked.
type duringChat struct {
	next   Chatter
	during func()
	once   sync.Once
}

func (m *duringChat) Chat(ctx context.Context, req Request) (Reply, error) {
	m.once.Do(m.during)
	return m.next.Chat(ctx, req)
}

// TestRedeliveredMessageFindsItsOwnStep: after a crash that left the
// agent's calls recorded but unsent, each journaled message handled again
// matches exactly its own history slot (its journal seq), not another
// recorded message alike in thread, sender, ref and payload, and the step
// is sent again only by the handling of the message that made it: the
// calls go out once more, not twice, and are not left waiting to be given
// up.
func TestRedeliveredMessageFindsItsOwnStep(t *testing.T) {
	callPoet := Reply{ToolCalls: []ToolCall{toolCall("c1", "poet", `{"Text":"rain"}`)}}
	cases := []struct {
		name string
		// during, when set, is recorded while the first message's model
		// call runs; after, when set, is recorded after its step.
		during, after func(*loopRig)
		// again are the messages handled again after the restart, in
		// order; want what each gives.
		again []haltStep
		want  [][]string
	}{
		{name: "an identical message recorded after the step",
			after: func(r *loopRig) { recordSeqMessage(r, "console", "go", "", 2) },
			again: []haltStep{seqMessage("console", "go", "", 1), seqMessage("console", "go", "", 2)},
			want:  [][]string{{"poet c1"}, {"await"}}},
		{name: "a peer's message recorded during the model call",
			during: func(r *loopRig) { recordSeqMessage(r, "poet", "late", "c0", 2) },
			again:  []haltStep{seqMessage("console", "go", "", 1), seqMessage("poet", "late", "c0", 2)},
			want:   [][]string{{"poet c1"}, {"await"}}},
		{name: "a peer's message recorded during the model call, handled first",
			during: func(r *loopRig) { recordSeqMessage(r, "poet", "late", "c0", 2) },
			again:  []haltStep{seqMessage("poet", "late", "c0", 2), seqMessage("console", "go", "", 1)},
			want:   [][]string{{"await"}, {"poet c1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLoopRig(t, callPoet)
			if tc.during != nil {
				r.a.LLM = &duringChat{next: r.model, during: func() { tc.during(r) }}
			}
			resp, err := seqMessage("console", "go", "", 1).handle(context.Background(), r, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"poet c1"}, gave(resp)); diff != "" {
				t.Fatalf("the first handling gave (-want +got):\n%s", diff)
			}
			if tc.after != nil {
				tc.after(r)
			}
			r.restart(nil)
			var got [][]string
			for _, s := range tc.again {
				resp, err := s.handle(context.Background(), r, false)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				got = append(got, gave(resp))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the messages handled again gave (-want +got):\n%s", diff)
			}
			if n := len(r.model.requests()); n != 1 {
				t.Errorf("the model was asked %d times, want 1", n)
			}
		})
	}
}

// sendGate is a local tool that answers its call with a message to the
// poet and, while blocking is set (gate), signals entered and waits for
// its context to end instead, failing as a cancelled tool does.
func sendGate(gate *gateTool) LocalTool {
	return LocalTool{Spec: ToolSpec{Name: gate.name, Description: "Asks the poet."},
		Call: func(ctx context.Context, c LocalCall) (LocalResult, error) {
			if _, err := gate.tool().Call(ctx, c); err != nil {
				return LocalResult{}, err
			}
			return LocalResult{Send: &xmlpipe.SendResponse{To: "poet", Payload: &PoetTask{Text: "sun"}}}, nil
		}}
}

// TestHaltDuringResendKeepsFinishedLocalSends: a halt that lands while a
// message handled again after a crash re-sends the calls the crash left
// unsent, once a local tool of them (the route tool) finished by sending
// its message, keeps that message: after the resume the route tool is not
// run again (its fill model not asked again), only the stopped tool, and
// the same messages go out as the handling without the halt sends.
func TestHaltDuringResendKeepsFinishedLocalSends(t *testing.T) {
	reply := Reply{Content: "Routing.", ToolCalls: []ToolCall{toolCall("r1", "route", `{"need":"a poem"}`),
		toolCall("g1", "gate", `{}`)}}
	r := newLoopRig(t, reply)
	route := &sendTool{name: "route", poet: mustPT[PoetTask](t)}
	gate := newGateTool("gate")
	tools := []LocalTool{route.tool(), sendGate(gate)}
	r.a.LocalTools = tools
	first, err := message("console", "go", "").handle(context.Background(), r, true)
	if err != nil {
		t.Fatal(err)
	}
	want := sentMessages(t, first)
	if len(want) != 2 {
		t.Fatalf("the first handling sent %v, want route's and gate's messages", want)
	}
	// The process dies before the pump journals what the handling sent.
	r.restart(func(r *loopRig) { r.a.LocalTools = tools })
	gate.block(true)
	haltHandling(t, r, message("console", "go", ""), false, r.model, gate.entered)
	gate.block(false)
	resp, err := message("console", "go", "").handle(context.Background(), r, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, sentMessages(t, resp)); diff != "" {
		t.Errorf("after the resume it sent (-first handling +after):\n%s", diff)
	}
	if n := route.runCount(); n != 2 {
		t.Errorf("route ran %d times; want twice (the first handling, the re-send the halt stopped after it)", n)
	}
	if n := gate.runCount(); n != 3 {
		t.Errorf("gate ran %d times; want 3 (the first handling, the halted re-send, after the resume)", n)
	}
	if n := len(r.model.requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
}
