package organism

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRecoveryPagesThroughABacklog: a backlog of undelivered greetings
// larger than a recovery page is re-delivered in the background, every one
// exactly once; a greeting whose greeter output is already journaled (its
// handler ran, only the delivery mark was lost) is marked delivered and not
// run again; the status counts both and ends Done.
func TestRecoveryPagesThroughABacklog(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = recoveryPage + 44
	now := time.Now()
	var handledThread string
	var last int64
	for i := range n {
		thread := stage.NewThreadID()
		if err := s.PutThread(store.ThreadRow{ID: thread, Path: []string{"hello-world", "console", "greeter"},
			Created: now, Touched: now}); err != nil {
			t.Fatal(err)
		}
		body := fmt.Appendf(nil, `<Greeting xmlns=""><Name>n%d</Name></Greeting>`, i)
		env := stage.AppendEnvelope(nil, "console", "greeter", thread, body)
		if last, err = s.AppendSeq(store.Entry{Thread: thread, Conversation: thread, Direction: store.Inbound,
			Kind: store.Message, From: "console", To: "greeter", Listener: "greeter", PayloadTag: "Greeting", Bytes: env}); err != nil {
			t.Fatal(err)
		}
		if i == 7 { // greeter had answered this one before the crash
			handledThread = thread
			out := stage.AppendEnvelope(nil, "greeter", "shouter", thread,
				[]byte(`<GreetingResponse xmlns=""><Message>Hello, n7!</Message><OriginalSender>console</OriginalSender></GreetingResponse>`))
			if last, err = s.AppendSeq(store.Entry{Thread: thread, Conversation: thread, Direction: store.Outbound,
				Kind: store.Message, From: "greeter", To: "shouter", PayloadTag: "GreetingResponse", Bytes: out}); err != nil {
				t.Fatal(err)
			}
		}
	}
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
	if !st.Done || st.Active || st.Err != "" || st.Redelivered != n-1 || st.Skipped != 1 || st.Until != last {
		t.Fatalf("recovery status = %+v, want done with %d redelivered, 1 skipped, until %d", st, n-1, last)
	}
	shutdown(t, o) // drains the recovered conversations
	lines := out.all()
	if len(lines) != n-1 {
		t.Fatalf("recovery printed %d lines, want %d", len(lines), n-1)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("printed %q twice", l)
		}
		seen[l] = true
	}
	if seen["[shouter] HELLO, N7!"] {
		t.Fatal("the greeting already answered before the crash was handled again")
	}
	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	und, err := r.Undelivered()
	if err != nil || len(und) != 0 {
		t.Fatalf("Undelivered after recovery = %d entries, %v (handled thread %s)", len(und), err, handledThread)
	}
}
