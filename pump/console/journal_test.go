package console

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// setClock is a test clock that moves only when the test sets it.
type setClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *setClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// startDurableHello starts the hello-world organism on data directory dir
// with clock, waits for its boot conversation and returns its backend. The
// organism is shut down at the end of the test if the test has not done it.
func startDurableHello(t *testing.T, dir string, clock *setClock, edit func(*config.Organism)) *organism.Local {
	t.Helper()
	opts := organism.Options{Clock: clock.Now, Logger: slog.New(slog.DiscardHandler)}
	l, err := organism.Assemble(opts, func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Load("testdata/organism.yaml")
		if err != nil {
			return nil, err
		}
		if edit != nil {
			edit(cfg)
		}
		o.DataDir = dir
		return organism.New(cfg, o)
	})
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	completed := make(chan string, 64)
	cancel := l.Organism().Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			completed <- e.Conversation
		}
	}))
	defer cancel()
	if err := l.Organism().Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	for {
		select {
		case conv := <-completed:
			if conv == l.Organism().BootThread {
				return l
			}
		case <-time.After(eventTimeout):
			t.Fatalf("boot did not complete within %v", eventTimeout)
		}
	}
}

// greet sends @greeter name through b and waits for the conversation to
// complete; it returns the conversation id.
func greet(t *testing.T, b *organism.Local, name string) string {
	t.Helper()
	completed := make(chan string, 8)
	cancel := b.Subscribe(func(o organism.Output) {
		if o.Kind == organism.OutputComplete {
			completed <- o.Conversation
		}
	})
	defer cancel()
	conv, err := b.Send(context.Background(), organism.Message{Target: "greeter", Text: name})
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case c := <-completed:
			if c == conv {
				return conv
			}
		case <-time.After(eventTimeout):
			t.Fatalf("conversation %s did not complete within %v", conv, eventTimeout)
		}
	}
}

// TestJournalViewsAcrossRestart: on a durable organism /threads and /monitor
// read the journal, so a conversation that ended before a restart still
// shows (marked ended) with its whole history, next to the live threads
// restored from the store — idle since their last use before the restart,
// not since the restart.
func TestJournalViewsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	clock := &setClock{t: t0}
	b := startDurableHello(t, dir, clock, nil)
	clock.Set(t0.Add(time.Minute))
	dan := greet(t, b, "Dan")
	clock.Set(t0.Add(2 * time.Minute))
	eve := greet(t, b, "Eve")
	if err := b.Organism().Pump.Threads().End(dan); err != nil { // Dan's conversation is over
		t.Fatal(err)
	}
	clock.Set(t0.Add(5 * time.Minute))
	b.Organism().Pump.Threads().Touch(eve) // Eve's was last used now: its idle time runs on from here
	if err := b.Organism().Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	clock.Set(t0.Add(10 * time.Minute))
	b = startDurableHello(t, dir, clock, nil)
	ctx := context.Background()
	if err := b.Organism().Store().Flush(ctx); err != nil { // the views read committed entries
		t.Fatal(err)
	}
	threads, err := b.Threads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]organism.Thread{}
	for _, th := range threads {
		byID[th.ID] = th
	}
	wantDan := organism.Thread{ID: dan, Ended: true, Slots: 3, Idle: 9 * time.Minute, LastFrom: "shouter", LastTo: "response-handler"}
	if d := cmp.Diff(wantDan, byID[dan]); d != "" {
		t.Errorf("Dan's ended conversation (-want +got):\n%s", d)
	}
	if th, ok := byID[eve]; !ok || th.Ended || th.Depth == 0 || th.Idle != 5*time.Minute {
		t.Errorf("Eve's conversation = %+v, %v; want it live (restored), idle 5m since its last use", th, ok)
	}

	hs, err := b.Monitor(ctx, dan[:8])
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	want := []organism.History{{ID: dan, Slots: []organism.Slot{
		{From: "console", To: "greeter", PayloadType: "Greeting", Payload: "<Greeting><Name>Dan</Name></Greeting>", Time: at},
		{From: "greeter", To: "shouter", PayloadType: "GreetingResponse", Time: at,
			Payload: "<GreetingResponse><Message>Hello, Dan!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>"},
		{From: "shouter", To: "response-handler", PayloadType: "ShoutedResponse", Time: at,
			Payload: "<ShoutedResponse><Message>HELLO, DAN!</Message></ShoutedResponse>"},
	}}}
	if d := cmp.Diff(want, hs); d != "" {
		t.Errorf("Monitor(%s) (-want +got):\n%s", dan[:8], d)
	}

	golden(t, "journal-restart", normalizeIDs(session(t, b, Config{}, "/threads\n/monitor *\n")))
}

// TestJournalViewsJournalDisabled: a durable organism with the journal
// switched off shows its live threads and their history from memory.
func TestJournalViewsJournalDisabled(t *testing.T) {
	clock := &setClock{t: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}
	b := startDurableHello(t, t.TempDir(), clock, func(c *config.Organism) { c.Journal.Enabled = false })
	dan := greet(t, b, "Dan")
	threads, err := b.Threads(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) == 0 || threads[0].ID != dan || threads[0].Ended {
		t.Fatalf("threads = %+v; want Dan's live conversation first", threads)
	}
	hs, err := b.Monitor(context.Background(), dan[:8])
	if err != nil {
		t.Fatal(err)
	}
	want := []organism.History{{ID: dan, Slots: []organism.Slot{{From: "console", To: "greeter", PayloadType: "Greeting",
		Payload: "<Greeting><Name>Dan</Name></Greeting>", Time: clock.Now()}}}}
	if d := cmp.Diff(want, hs); d != "" {
		t.Errorf("Monitor from the context buffer (-want +got):\n%s", d)
	}
}
