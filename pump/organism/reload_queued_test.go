package organism

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// queuedDoc is a shouter and its printer; shouter is the listener the
// reloads of TestReloadWithQueuedMessages remove or change.
const queuedDoc = `organism: {name: queued}
listeners:
  - {name: shouter, payload_class: handlers.hello.GreetingResponse, handler: handlers.hello.handle_shout, description: shouts}
  - {name: response-handler, payload_class: handlers.hello.ShoutedResponse, handler: handlers.hello.handle_response_print, description: prints}
`

// convLog collects the events of the conversations a test begins.
type convLog struct {
	mu     sync.Mutex
	events map[string][]pump.Event
	done   chan string
}

func newConvLog() *convLog {
	return &convLog{events: map[string][]pump.Event{}, done: make(chan string, 64)}
}

func (c *convLog) outlet() pump.Outlet {
	return pump.OutletFunc(func(e pump.Event) {
		c.mu.Lock()
		c.events[e.Conversation] = append(c.events[e.Conversation], e)
		c.mu.Unlock()
		if e.Kind == pump.EventComplete {
			c.done <- e.Conversation
		}
	})
}

// outcome is what a conversation came to: its failures and its
// completion's error.
type outcome struct {
	Failures []string
	Complete string
}

func (c *convLog) outcome(conv string) outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	var o outcome
	for _, e := range c.events[conv] {
		switch e.Kind {
		case pump.EventHuh, pump.EventDeadLetter, pump.EventSystemError:
			o.Failures = append(o.Failures, string(e.Kind)+": "+e.Error)
		case pump.EventComplete:
			o.Complete = "complete " + e.Error
		}
	}
	return o
}

// TestReloadWithQueuedMessages: messages wait in a paused listener's
// queue when a reload removes that listener, or changes its schema (the
// payload class, so the same name takes another root tag). The
// conversations they belong to began with the old version: each still
// reaches it and completes, answered once, without an error — once the
// removed listener is resumed by the reload itself, or the changed one
// by the operator's Resume (its pause carries to the new version and
// reaches the old one). A conversation begun after the reload with the
// old payload gets a clear failure.
func TestReloadWithQueuedMessages(t *testing.T) {
	tests := []struct {
		name    string
		edit    string // the listeners after the reload
		resume  bool   // the operator resumes shouter after the reload
		refused bool   // a new GreetingResponse to shouter is refused
	}{
		{"removed", `  - {name: response-handler, payload_class: handlers.hello.ShoutedResponse, handler: handlers.hello.handle_response_print, description: prints}
`, false, true},
		{"schema changed", `  - {name: shouter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: greets now}
  - {name: response-handler, payload_class: handlers.hello.ShoutedResponse, handler: handlers.hello.handle_response_print, description: prints}
`, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var printed atomic.Int32 // answers printed
			o := reloadOrganismWith(t, dir, queuedDoc, Options{Env: catalog.Env{Print: func(_, from, text string) {
				if from == "shouter" && text == "HI" {
					printed.Add(1)
				}
			}}})
			if err := o.Pump.Pause("shouter"); err != nil {
				t.Fatal(err)
			}
			log := newConvLog()
			var convs []string
			for range 3 {
				id, err := o.Pump.Send(context.Background(), "console", "shouter",
					&hello.GreetingResponse{Message: "hi", OriginalSender: "response-handler"}, log.outlet())
				if err != nil {
					t.Fatal(err)
				}
				convs = append(convs, id)
			}
			waitQueued(t, o, "shouter", 3)
			cfg := parseIn(t, dir, "organism: {name: queued}\nlisteners:\n"+tc.edit)
			if _, err := o.Reload(cfg); err != nil {
				t.Fatalf("reload: %v", err)
			}
			if tc.resume {
				if err := o.Pump.Resume("shouter"); err != nil {
					t.Fatal(err)
				}
			}
			waitConvs(t, log, convs)
			for _, id := range convs {
				if diff := cmp.Diff(outcome{Complete: "complete "}, log.outcome(id)); diff != "" {
					t.Errorf("conversation %s queued during the reload (-want +got):\n%s", id, diff)
				}
			}
			if n := printed.Load(); n != 3 {
				t.Errorf("%d answers printed, want 3 (one per conversation queued during the reload)", n)
			}
			if tc.refused {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				ev, err := o.Pump.Ask(ctx, "console", "shouter",
					&hello.GreetingResponse{Message: "late", OriginalSender: "response-handler"})
				if err == nil {
					t.Errorf("a GreetingResponse to shouter after the reload was accepted: %+v", ev)
				}
				t.Logf("a new conversation after the reload: %v", err)
			}
		})
	}
}

// queueDepth is the messages waiting at every version of name.
func queueDepth(o *Organism, name string) int {
	n := 0
	for _, l := range o.Pump.Listeners() {
		if l.Name == name {
			n += l.QueueDepth
		}
	}
	return n
}

// waitQueued waits up to 60 s until n messages wait at name.
func waitQueued(t *testing.T, o *Organism, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for queueDepth(o, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages queued at %s after 60 s, want %d", queueDepth(o, name), name, n)
		}
		time.Sleep(10 * time.Millisecond) // polling: the queue tells no one
	}
}

// waitConvs waits up to 60 s for every conversation of ids to complete.
func waitConvs(t *testing.T, log *convLog, ids []string) {
	t.Helper()
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	timeout := time.After(60 * time.Second)
	for len(left) > 0 {
		select {
		case id := <-log.done:
			delete(left, id)
		case <-timeout:
			t.Fatalf("conversations not complete after 60 s: %v", left)
		}
	}
}
