package organism

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// startDurableHello assembles and starts the hello-world organism on dir.
func startDurableHello(t *testing.T, dir string, edit func(*config.Organism)) (*Organism, *printed) {
	t.Helper()
	out := &printed{ch: make(chan string, 100)}
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	o, err := New(cfg, Options{DataDir: dir, Env: catalog.Env{Print: out.print}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o, out
}

func shutdown(t *testing.T, o *Organism) {
	t.Helper()
	if err := o.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// converse sends a greeting and waits for the conversation to complete.
func converse(t *testing.T, o *Organism, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	conv, err := o.Pump.Send(ctx, "console", "greeter", &hello.Greeting{Name: name}, pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			close(done)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("conversation never completed")
	}
	return conv
}

// TestDurableThreadsSurviveRestart: a thread chain begun before a restart
// prunes to the right caller after it, with its timestamps exact.
func TestDurableThreadsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	o, _ := startDurableHello(t, dir, nil)
	root := stage.NewThreadID()
	th := o.Pump.Threads()
	if err := th.Begin(root, "console", "greeter"); err != nil {
		t.Fatal(err)
	}
	child, err := th.Extend(root, "shouter")
	if err != nil {
		t.Fatal(err)
	}
	before := records(th, root, child)
	shutdown(t, o)

	o2, _ := startDurableHello(t, dir, nil)
	defer shutdown(t, o2)
	th2 := o2.Pump.Threads()
	after := records(th2, root, child)
	if diff := cmp.Diff(before, after, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Touched" }, cmp.Ignore())); diff != "" {
		t.Fatalf("restored threads differ (-before +after):\n%s", diff)
	}
	caller, thread, err := th2.Prune(child)
	if err != nil {
		t.Fatal(err)
	}
	if caller != "greeter" || thread != root {
		t.Fatalf("Prune(child) after restart = %q, %q; want greeter, %s", caller, thread, root)
	}
}

func records(th *registry.Threads, ids ...string) []registry.ThreadRecord {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []registry.ThreadRecord
	for _, r := range th.Records() {
		if want[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// TestDurableJournalsConversation: every hop of the hello-world conversation
// is journaled and marked delivered; Verify passes; nothing is left to
// recover on restart.
func TestDurableJournalsConversation(t *testing.T) {
	dir := t.TempDir()
	o, out := startDurableHello(t, dir, nil)
	conv := converse(t, o, "Dan")
	if line := <-out.ch; line != "[shouter] HELLO, DAN!" {
		t.Fatalf("printed %q", line)
	}
	shutdown(t, o)

	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entries, err := s.Conversation(conv)
	if err != nil {
		t.Fatal(err)
	}
	type hop struct{ Dir, From, To, Listener, Tag string }
	var got []hop
	for _, e := range entries {
		got = append(got, hop{e.Direction.String(), e.From, e.To, e.Listener, e.PayloadTag})
	}
	want := []hop{
		{"inbound", "console", "greeter", "greeter", "Greeting"},
		{"outbound", "greeter", "shouter", "shouter", "GreetingResponse"},
		{"outbound", "shouter", "response-handler", "response-handler", "ShoutedResponse"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("journal (-want +got):\n%s", diff)
	}
	und, err := s.Undelivered()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range und {
		if e.Conversation == conv {
			t.Fatalf("seq %d (%s→%s) was never marked delivered", e.Seq, e.From, e.To)
		}
	}
	rep, err := s.Verify(context.Background(), nil)
	if err != nil || !rep.OK() {
		t.Fatalf("Verify = %v, %v", rep.Faults, err)
	}
}

// TestDurableJournalDisabled: journal.enabled false journals nothing but
// still persists threads.
func TestDurableJournalDisabled(t *testing.T) {
	dir := t.TempDir()
	o, out := startDurableHello(t, dir, func(c *config.Organism) { c.Journal.Enabled = false })
	converse(t, o, "Ann")
	<-out.ch
	s := o.Store()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(); err != nil || n != 0 {
		t.Fatalf("journal rows = %d, %v; want 0", n, err)
	}
	shutdown(t, o)
}

// TestDurableRetentionSweeps: prune_on_delivery with a short sweep interval
// removes the delivered entries, leaving tombstones Verify accepts.
func TestDurableRetentionSweeps(t *testing.T) {
	dir := t.TempDir()
	o, out := startDurableHello(t, dir, func(c *config.Organism) {
		c.Journal.Retention = config.Retention{Policy: config.PruneOnDelivery}
		c.Journal.SweepInterval = config.Duration(10 * time.Millisecond)
	})
	defer shutdown(t, o)
	conv := converse(t, o, "Bo")
	<-out.ch
	s := o.Store()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		entries, err := s.Conversation(conv)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries of the conversation still journaled after the sweeps", len(entries))
		}
		time.Sleep(10 * time.Millisecond) // polling the sweeper's effect on the database
	}
	rep, err := s.Verify(context.Background(), nil)
	if err != nil || !rep.OK() || rep.Tombstones == 0 {
		t.Fatalf("Verify = %+v, %v; want OK with tombstones", rep, err)
	}
}

// TestDurableRecoversUndelivered: an inbound message journaled (with its
// thread) but never marked delivered — a crash right after ingress — is
// handled after the restart and its conversation completes.
func TestDurableRecoversUndelivered(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	thread := stage.NewThreadID()
	now := time.Now()
	if err := s.PutThread(store.ThreadRow{ID: thread, Path: []string{"hello-world", "console", "greeter"},
		Created: now, Touched: now}); err != nil {
		t.Fatal(err)
	}
	env := stage.AppendEnvelope(nil, "console", "greeter", thread, []byte(`<Greeting xmlns=""><Name>Eve</Name></Greeting>`))
	seq, err := s.AppendSeq(store.Entry{Thread: thread, Conversation: thread, Direction: store.Inbound,
		Kind: store.Message, From: "console", To: "greeter", Listener: "greeter", PayloadTag: "Greeting", Bytes: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	o, out := startDurableHello(t, dir, nil)
	select {
	case line := <-out.ch:
		if line != "[shouter] HELLO, EVE!" {
			t.Fatalf("printed %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("recovered conversation never reached response-handler")
	}
	shutdown(t, o)
	s, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entries, err := s.Conversation(thread)
	if err != nil {
		t.Fatal(err)
	}
	inbound := 0
	for _, e := range entries {
		if e.Direction == store.Inbound {
			inbound++
		}
	}
	if inbound != 1 || entries[0].Seq != seq {
		t.Fatalf("conversation has %d inbound entries (first seq %d), want exactly the original %d", inbound, entries[0].Seq, seq)
	}
	und, err := s.Undelivered()
	if err != nil || len(und) != 0 {
		t.Fatalf("Undelivered after recovery = %d entries, %v", len(und), err)
	}
}

// TestDurableThreadProfilesSurviveRestart: a thread's security profile is
// part of the kernel state: a restart restores it (never wider), so a
// conversation begun under a profile cannot be widened by a crash.
func TestDurableThreadProfilesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	o, _ := startDurableHello(t, dir, nil)
	root := stage.NewThreadID()
	th := o.Pump.Threads()
	if _, _, _, err := th.JoinAs(root, "console", "greeter", "calc&readers"); err != nil {
		t.Fatal(err)
	}
	child, prof, err := th.ExtendAs(root, "shouter", "", "readers")
	if err != nil || prof != "calc&readers" {
		t.Fatalf("child under %q, %v", prof, err)
	}
	shutdown(t, o)

	o2, _ := startDurableHello(t, dir, nil)
	defer shutdown(t, o2)
	for _, id := range []string{root, child} {
		if got, ok := o2.Pump.Threads().Profile(id); !ok || got != "calc&readers" {
			t.Errorf("thread %s restored under %q (%v), want calc&readers", id, got, ok)
		}
	}
}
