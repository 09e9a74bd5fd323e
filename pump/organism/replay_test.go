package organism

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// recordHello records conversations on a durable hello-world organism (drive
// runs them) and returns the journal of conversation conv, read read-only.
func recordHello(t *testing.T, drive func(o *Organism) (conv string)) []store.Entry {
	t.Helper()
	dir := t.TempDir()
	o, _ := startDurableHello(t, dir, nil)
	conv := drive(o)
	shutdown(t, o)
	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	entries, err := r.Conversation(conv)
	if err != nil || len(entries) == 0 {
		t.Fatalf("Conversation(%s) = %d entries, %v", conv, len(entries), err)
	}
	return entries
}

// helloConfig loads the repository's hello-world organism.yaml, edited.
func helloConfig(t *testing.T, edit func(*config.Organism)) *config.Organism {
	t.Helper()
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	return cfg
}

// replay runs Replay with a ten-second bound.
func replay(t *testing.T, cfg *config.Organism, recorded []store.Entry) *ReplayReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var done []int64
	rep, err := Replay(ctx, cfg, Options{Logger: slog.New(slog.DiscardHandler)}, recorded,
		func(d, total int64) { done = append(done, d, total) })
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if len(done) < 2 || done[len(done)-2] != done[len(done)-1] {
		t.Errorf("progress reports %v; want a last call with done == total", done)
	}
	return rep
}

// stepView is a step without payload bytes, for compact comparisons.
type stepView struct {
	Op                   ReplayOp
	Kind, From, To, Tag  string
	RecordedP, ReplayedP string
}

func viewSteps(steps []ReplayStep) []stepView {
	var out []stepView
	for _, s := range steps {
		m := s.Recorded
		if m == nil {
			m = s.Replayed
		}
		v := stepView{Op: s.Op, Kind: m.Kind, From: m.From, To: m.To, Tag: m.PayloadTag}
		if s.Op == ReplayChanged {
			v.RecordedP, v.ReplayedP = string(s.Recorded.Payload), string(s.Replayed.Payload)
		}
		out = append(out, v)
	}
	return out
}

// TestReplayHelloIdentical: the recorded hello-world conversation replays
// into a fresh in-memory organism with identical outputs.
func TestReplayHelloIdentical(t *testing.T) {
	recorded := recordHello(t, func(o *Organism) string { return converse(t, o, "Dan") })
	rep := replay(t, helloConfig(t, nil), recorded)
	want := []stepView{
		{Op: ReplaySame, Kind: "message", From: "greeter", To: "shouter", Tag: "GreetingResponse"},
		{Op: ReplaySame, Kind: "message", From: "shouter", To: "response-handler", Tag: "ShoutedResponse"},
	}
	if d := cmp.Diff(want, viewSteps(rep.Steps)); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	if !rep.Identical() || rep.Reordered {
		t.Fatalf("Identical = %v, Reordered = %v; want an identical replay", rep.Identical(), rep.Reordered)
	}
	if len(rep.Inputs) != 1 || rep.Inputs[0].From != "console" || rep.Inputs[0].Rejected != "" {
		t.Fatalf("inputs = %+v", rep.Inputs)
	}
	if d := cmp.Diff([]string{"[shouter] HELLO, DAN!"}, rep.Printed); d != "" {
		t.Fatalf("printed (-want +got):\n%s", d)
	}
	if !slices.Equal(rep.Conversations, []string{rep.Conversation}) {
		t.Fatalf("replay conversations %v, want the recorded id %s reused", rep.Conversations, rep.Conversation)
	}
}

// TestReplayTampered: a changed recorded payload and a changed configuration
// both show as differences.
func TestReplayTampered(t *testing.T) {
	recorded := recordHello(t, func(o *Organism) string { return converse(t, o, "Dan") })

	t.Run("payload edited in the recording", func(t *testing.T) {
		edited := slices.Clone(recorded)
		for i, e := range edited {
			if e.PayloadTag == "ShoutedResponse" {
				edited[i].Bytes = bytes.Replace(e.Bytes, []byte("HELLO, DAN!"), []byte("HELLO, DANIEL!"), 1)
			}
		}
		rep := replay(t, helloConfig(t, nil), edited)
		want := []stepView{
			{Op: ReplaySame, Kind: "message", From: "greeter", To: "shouter", Tag: "GreetingResponse"},
			{Op: ReplayChanged, Kind: "message", From: "shouter", To: "response-handler", Tag: "ShoutedResponse",
				RecordedP: `<ShoutedResponse xmlns=""><Message>HELLO, DANIEL!</Message></ShoutedResponse>`,
				ReplayedP: `<ShoutedResponse xmlns=""><Message>HELLO, DAN!</Message></ShoutedResponse>`},
		}
		if d := cmp.Diff(want, viewSteps(rep.Steps)); d != "" {
			t.Fatalf("steps (-want +got):\n%s", d)
		}
		if rep.Identical() {
			t.Fatal("a tampered recording replays as identical")
		}
	})

	t.Run("response-handler renamed in the config", func(t *testing.T) {
		cfg := helloConfig(t, func(c *config.Organism) {
			for i := range c.Listeners {
				if c.Listeners[i].Name == "response-handler" {
					c.Listeners[i].Name = "printer"
				}
			}
		})
		rep := replay(t, cfg, recorded)
		if rep.Identical() {
			t.Fatalf("replay into a changed organism is identical: %+v", viewSteps(rep.Steps))
		}
		got := viewSteps(rep.Steps)
		if got[0].Op != ReplaySame || rep.Count(ReplayMissing) != 1 || rep.Count(ReplayExtra) == 0 {
			t.Fatalf("steps = %+v; want the greeter's output same, the shout missing and the failure extra", got)
		}
		if len(rep.Printed) != 0 {
			t.Fatalf("printed %v with no response-handler", rep.Printed)
		}
	})
}

// TestReplayTwoInputs: a conversation with a second external message on
// its thread replays into one conversation, the second input mapped onto
// the replay's own thread. (It continues the conversation's root: a hop's
// thread that only forwarded ends with the conversation, so a message
// naming it afterwards begins a conversation of its own.)
func TestReplayTwoInputs(t *testing.T) {
	recorded := recordHello(t, func(o *Organism) string {
		conv := converse(t, o, "Dan")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		env := stage.AppendEnvelope(nil, "console", "greeter", conv, []byte(`<Greeting xmlns=""><Name>Eve</Name></Greeting>`))
		if _, err := o.Pump.InjectWait(ctx, env, pump.OutletFunc(func(e pump.Event) {
			if e.Kind == pump.EventComplete {
				close(done)
			}
		})); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("second message never completed")
		}
		return conv
	})
	rep := replay(t, helloConfig(t, nil), recorded)
	if len(rep.Inputs) != 2 || !rep.Identical() || len(rep.Steps) != 4 {
		t.Fatalf("inputs %+v, steps %+v, identical %v; want 2 inputs, 4 identical outputs",
			rep.Inputs, viewSteps(rep.Steps), rep.Identical())
	}
	if len(rep.Conversations) != 1 {
		t.Fatalf("replay conversations = %v; want the second input in the first one's conversation", rep.Conversations)
	}
	if d := cmp.Diff([]string{"[shouter] HELLO, DAN!", "[shouter] HELLO, EVE!"}, rep.Printed); d != "" {
		t.Fatalf("printed (-want +got):\n%s", d)
	}
}

// TestReplayNothing: a recording without inbound external messages is an
// error.
func TestReplayNothing(t *testing.T) {
	recorded := []store.Entry{{Seq: 1, Direction: store.Outbound, Kind: store.Message, From: "a", Bytes: []byte("<x/>")}}
	_, err := Replay(context.Background(), helloConfig(t, nil), Options{}, recorded, nil)
	if !errors.Is(err, ErrNothingToReplay) {
		t.Fatalf("Replay = %v, want ErrNothingToReplay", err)
	}
}

// TestAlign covers the comparison: identical, changed, missing, extra and
// reordered outputs.
func TestAlign(t *testing.T) {
	msg := func(from, to, payload string) ReplayMessage {
		return ReplayMessage{Kind: "message", From: from, To: to, PayloadTag: "P", Payload: []byte(payload)}
	}
	a, b, c := msg("a", "b", "1"), msg("b", "c", "2"), msg("c", "d", "3")
	b2 := msg("b", "c", "changed")
	tests := []struct {
		name      string
		rec, rep  []ReplayMessage
		ops       []ReplayOp
		reordered bool
	}{
		{"identical", []ReplayMessage{a, b, c}, []ReplayMessage{a, b, c}, []ReplayOp{ReplaySame, ReplaySame, ReplaySame}, false},
		{"changed", []ReplayMessage{a, b, c}, []ReplayMessage{a, b2, c}, []ReplayOp{ReplaySame, ReplayChanged, ReplaySame}, false},
		{"missing", []ReplayMessage{a, b, c}, []ReplayMessage{a, c}, []ReplayOp{ReplaySame, ReplayMissing, ReplaySame}, false},
		{"extra", []ReplayMessage{a, c}, []ReplayMessage{a, b, c}, []ReplayOp{ReplaySame, ReplayExtra, ReplaySame}, false},
		{"reordered", []ReplayMessage{a, b, c}, []ReplayMessage{a, c, b},
			[]ReplayOp{ReplaySame, ReplayMissing, ReplaySame, ReplayExtra}, true},
		{"nothing replayed", []ReplayMessage{a}, nil, []ReplayOp{ReplayMissing}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := align(tt.rec, tt.rep)
			var ops []ReplayOp
			for _, s := range steps {
				ops = append(ops, s.Op)
			}
			if d := cmp.Diff(tt.ops, ops); d != "" {
				t.Fatalf("ops (-want +got):\n%s", d)
			}
			rep := ReplayReport{Steps: steps, Reordered: !sameInOrder(steps) && sameMultiset(tt.rec, tt.rep)}
			if rep.Reordered != tt.reordered {
				t.Fatalf("Reordered = %v, want %v", rep.Reordered, tt.reordered)
			}
			wantIdentical := tt.name == "identical" || tt.reordered
			if rep.Identical() != wantIdentical {
				t.Fatalf("Identical = %v, want %v", rep.Identical(), wantIdentical)
			}
			if pos := alignByPosition(tt.rec, tt.rep); tt.name == "identical" && !sameInOrder(pos) {
				t.Fatalf("alignByPosition of identical outputs = %+v", pos)
			}
		})
	}
}

// TestReplayPayloadNormalised: the payload is cut from the canonical
// envelope and the conversation's thread ids become symbols.
func TestReplayPayloadNormalised(t *testing.T) {
	thread := stage.NewThreadID()
	env := stage.AppendEnvelope(nil, "a", "b", thread, []byte(`<Note xmlns=""><Ref>`+thread+`</Ref></Note>`))
	es := []store.Entry{{Thread: thread, Conversation: thread, Kind: store.Message, Bytes: env}}
	got := reduce(es[0], threadSymbols(es))
	if want := `<Note xmlns=""><Ref>thread-1</Ref></Note>`; string(got.Payload) != want {
		t.Fatalf("payload = %s, want %s", got.Payload, want)
	}
	if raw := []byte("not an envelope"); !bytes.Equal(payloadOf(raw), raw) {
		t.Fatalf("payloadOf(non-envelope) = %s", payloadOf(raw))
	}
}

// TestReplayHuhOriginalAttemptNormalised: the thread id inside a <huh>'s
// base64 original attempt is normalised too, so a recorded and a replayed
// <huh> about the same message on different threads compare equal.
func TestReplayHuhOriginalAttemptNormalised(t *testing.T) {
	huhOn := func(thread string) store.Entry {
		attempt := stage.AppendEnvelope(nil, "a", "b", thread, []byte(`<Bad xmlns=""/>`))
		pt, err := xmlpipe.PayloadTypeOf[xmlpipe.Huh]()
		if err != nil {
			t.Fatal(err)
		}
		body, err := pt.AppendPayload(nil, stage.NewHuh(failure.ErrNoPayload, attempt))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(body, []byte(thread)) {
			t.Fatalf("original attempt is not base64 in the payload: %s", body)
		}
		env := stage.AppendEnvelope(nil, "core", "a", thread, body)
		return store.Entry{Thread: thread, Conversation: thread, Kind: store.Huh, Bytes: env}
	}
	rec, rep := huhOn(stage.NewThreadID()), huhOn(stage.NewThreadID())
	a := reduce(rec, threadSymbols([]store.Entry{rec}))
	b := reduce(rep, threadSymbols([]store.Entry{rep}))
	if !bytes.Equal(a.Payload, b.Payload) {
		t.Fatalf("huh payloads differ after normalisation:\n%s\n%s", a.Payload, b.Payload)
	}
	if !bytes.Contains(a.Payload, []byte("thread-1")) || bytes.Contains(a.Payload, []byte(rec.Thread)) {
		t.Fatalf("thread id not normalised inside the original attempt: %s", a.Payload)
	}
}
