package organism

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRecoveryDoesNotRerunAKilledConversation: a crash right after a kill
// leaves the greeting the kill dropped without its delivery mark, but with
// the kill's dead letter journaled after it. The restart marks it delivered
// instead of running the killed conversation again; a greeting sent on a
// conversation after its kill (a continuation) and one of a conversation
// never killed are re-delivered as before.
func TestRecoveryDoesNotRerunAKilledConversation(t *testing.T) {
	recoverAfterDrop(t, pump.KilledReason)
}

// TestRecoveryDoesNotRerunACancelledAnswer: as a kill's, a cancel's dead
// letter keeps the restart from running again what the cancel dropped,
// while the conversation's continuation after it runs.
func TestRecoveryDoesNotRerunACancelledAnswer(t *testing.T) {
	recoverAfterDrop(t, pump.CancelledReason)
}

// recoverAfterDrop is TestRecoveryDoesNotRerunAKilledConversation with the
// drop's dead letter saying reason.
func recoverAfterDrop(t *testing.T, reason string) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	greet := func(thread, name string) {
		t.Helper()
		if err := s.PutThread(store.ThreadRow{ID: thread, Path: []string{"hello-world", "console", "greeter"},
			Created: now, Touched: now}); err != nil {
			t.Fatal(err)
		}
		env := stage.AppendEnvelope(nil, "console", "greeter", thread, []byte(`<Greeting xmlns=""><Name>`+name+`</Name></Greeting>`))
		if _, err := s.AppendSeq(store.Entry{Thread: thread, Conversation: thread, Direction: store.Inbound,
			Kind: store.Message, From: "console", To: "greeter", Listener: "greeter", PayloadTag: "Greeting", Bytes: env}); err != nil {
			t.Fatal(err)
		}
	}
	kill := func(thread string) {
		t.Helper()
		if _, err := s.AppendSeq(store.Entry{Thread: thread, Conversation: thread, Direction: store.Outbound,
			Kind: store.DeadLetter, From: "console", To: "greeter", PayloadTag: "Greeting",
			Bytes:       []byte(`<record kind="dead-letter" from="console" to="greeter" listener="" payload="Greeting"/>`),
			Diagnostics: reason + ": the handler's answer is dropped"}); err != nil {
			t.Fatal(err)
		}
	}
	killed, continued, alive := stage.NewThreadID(), stage.NewThreadID(), stage.NewThreadID()
	greet(killed, "killed")
	greet(continued, "before")
	kill(killed)
	kill(continued)
	greet(continued, "after")
	greet(alive, "alive")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	o, out := startDurableHello(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := o.WaitRecovered(ctx); err != nil {
		t.Fatalf("WaitRecovered: %v", err)
	}
	st := o.Recovery()
	shutdown(t, o) // drains the recovered conversations
	type counts struct{ Redelivered, Skipped int }
	if diff := cmp.Diff(counts{2, 2}, counts{st.Redelivered, st.Skipped}); diff != "" {
		t.Errorf("recovery (-want +got):\n%s", diff)
	}
	got := out.all()
	slices.Sort(got)
	if diff := cmp.Diff([]string{"[shouter] HELLO, AFTER!", "[shouter] HELLO, ALIVE!"}, got); diff != "" {
		t.Errorf("printed after the restart (-want +got):\n%s", diff)
	}
	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if und, err := r.Undelivered(); err != nil || len(und) != 0 {
		t.Fatalf("Undelivered after recovery = %d entries, %v", len(und), err)
	}
}
