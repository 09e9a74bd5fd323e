package pump_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRecoveredMessageRecordedOnce: a message re-delivered after a restart
// whose delivery before the crash recorded it in the thread's history (the
// history is restored at start) is not recorded a second time — an agent
// would see its caller's message twice — while one the crash kept out of the
// history is recorded, and an identical message recorded before this one
// was journaled is a message of its own.
func TestRecoveredMessageRecordedOnce(t *testing.T) {
	payload := []byte(`<Ping xmlns=""><Text>hello</Text></Ping>`)
	canonical := []byte(`<Ping><Text>hello</Text></Ping>`) // as the pump records it
	journaled := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		before    []time.Time // when identical slots were recorded before the restart
		journaled time.Time   // Recovered.Journaled
		want      int         // identical slots after the re-delivery
	}{
		{name: "recorded before the crash", before: []time.Time{journaled.Add(time.Millisecond)}, journaled: journaled, want: 1},
		{name: "recorded as it was journaled", before: []time.Time{journaled}, journaled: journaled, want: 1},
		{name: "not recorded before the crash", journaled: journaled, want: 1},
		{name: "an earlier identical message", before: []time.Time{journaled.Add(-time.Second)}, journaled: journaled, want: 2},
		{name: "journal time unknown", before: []time.Time{journaled.Add(time.Millisecond)}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			threads := registry.NewThreads(registry.ThreadsConfig{})
			cb, err := registry.NewContextBuffer(registry.ContextConfig{})
			if err != nil {
				t.Fatal(err)
			}
			// The handler sees the history as the pump left it for it (the
			// thread, and its history, end once it returns).
			history := make(chan []registry.Slot, 1)
			l := listenerOf(t, "pinger", func(_ context.Context, _ *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				var slots []registry.Slot
				if c, ok := cb.Thread(md.ThreadID); ok {
					slots = c.Slots()
				}
				history <- slots
				return nil, nil
			})
			thread := stage.NewThreadID()
			if err := threads.Begin(thread, client, "pinger"); err != nil {
				t.Fatal(err)
			}
			for _, at := range tt.before {
				if _, err := cb.Append(registry.Slot{ThreadID: thread, From: client, To: "pinger", PayloadType: "Ping",
					Raw: canonical, Time: at}); err != nil {
					t.Fatal(err)
				}
			}
			p := startPump(t, pump.Options{Threads: threads, Context: cb}, l)
			env := stage.AppendEnvelope(nil, client, "pinger", thread, payload)
			if err := p.Recover(waitCtx(t), pump.Recovered{Seq: 1, Envelope: env, Conversation: thread, Thread: thread,
				Journaled: tt.journaled}); err != nil {
				t.Fatal(err)
			}
			var slots []registry.Slot
			select {
			case slots = <-history:
			case <-waitCtx(t).Done():
				t.Fatal("the recovered message was never handled")
			}
			var got []string
			for _, s := range slots {
				got = append(got, s.From+"→"+s.To+" "+string(s.Raw))
			}
			want := make([]string, tt.want)
			for i := range want {
				want[i] = client + "→pinger " + string(canonical)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("history after the re-delivery (-want +got):\n%s", d)
			}
		})
	}
}

// TestRecoveredMessageRecordedOnceBySeq: with a journal that takes delivery
// marks, the history's slots carry the journal seq of their message, and a
// re-delivered message is matched by it, not by its bytes: of two identical
// messages ("go", "go") the first, journaled before the second but recorded
// after the second was journaled, is not taken for the second, whose
// delivery the crash kept out of the history. A slot without a seq
// (recorded before seqs were) is matched by its bytes as before.
func TestRecoveredMessageRecordedOnceBySeq(t *testing.T) {
	payload := []byte(`<Ping xmlns=""><Text>go</Text></Ping>`)
	canonical := []byte(`<Ping><Text>go</Text></Ping>`) // as the pump records it
	journaled := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	const seq = 7 // the re-delivered message's
	type slot struct {
		seq int64
		at  time.Time
	}
	tests := []struct {
		name   string
		before []slot // identical slots recorded before the restart
		want   []int64
	}{
		{name: "recorded before the crash", before: []slot{{seq, journaled.Add(time.Millisecond)}}, want: []int64{seq}},
		{name: "not recorded before the crash", want: []int64{seq}},
		{name: "an identical message journaled first, recorded after",
			before: []slot{{seq - 2, journaled.Add(time.Millisecond)}}, want: []int64{seq - 2, seq}},
		{name: "both recorded before the crash",
			before: []slot{{seq - 2, journaled.Add(time.Millisecond)}, {seq, journaled.Add(2 * time.Millisecond)}},
			want:   []int64{seq - 2, seq}},
		{name: "recorded without a seq", before: []slot{{0, journaled.Add(time.Millisecond)}}, want: []int64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			threads := registry.NewThreads(registry.ThreadsConfig{})
			cb, err := registry.NewContextBuffer(registry.ContextConfig{})
			if err != nil {
				t.Fatal(err)
			}
			history := make(chan []registry.Slot, 1)
			l := listenerOf(t, "pinger", func(_ context.Context, _ *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				var slots []registry.Slot
				if c, ok := cb.Thread(md.ThreadID); ok {
					slots = c.Slots()
				}
				history <- slots
				return nil, nil
			})
			thread := stage.NewThreadID()
			if err := threads.Begin(thread, client, "pinger"); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.before {
				if _, err := cb.Append(registry.Slot{ThreadID: thread, From: client, To: "pinger", PayloadType: "Ping",
					Raw: canonical, Time: s.at, Seq: s.seq}); err != nil {
					t.Fatal(err)
				}
			}
			p := startPump(t, pump.Options{Threads: threads, Context: cb, Journal: newMarkJournal()}, l)
			env := stage.AppendEnvelope(nil, client, "pinger", thread, payload)
			if err := p.Recover(waitCtx(t), pump.Recovered{Seq: seq, Envelope: env, Conversation: thread, Thread: thread,
				Journaled: journaled}); err != nil {
				t.Fatal(err)
			}
			var slots []registry.Slot
			select {
			case slots = <-history:
			case <-waitCtx(t).Done():
				t.Fatal("the recovered message was never handled")
			}
			var got []int64
			for _, s := range slots {
				if s.From != client || s.To != "pinger" || string(s.Raw) != string(canonical) {
					t.Errorf("unexpected slot %s→%s %s", s.From, s.To, s.Raw)
				}
				got = append(got, s.Seq)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("seqs of the history's slots after the re-delivery (-want +got):\n%s", d)
			}
		})
	}
}
