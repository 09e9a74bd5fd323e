package organism

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// printed collects what response-handler prints.
type printed struct {
	mu    sync.Mutex
	lines []string
	ch    chan string
}

// print records a line; ch gets it too unless ch is full (tests that print
// more than ch holds read lines instead).
func (p *printed) print(_, from, text string) {
	p.mu.Lock()
	p.lines = append(p.lines, "["+from+"] "+text)
	p.mu.Unlock()
	select {
	case p.ch <- "[" + from + "] " + text:
	default:
	}
}

// all returns every line printed so far.
func (p *printed) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func TestHelloWorldRoundTrip(t *testing.T) {
	out := &printed{ch: make(chan string, 10)}
	o, err := Load("../../organism.yaml", Options{Env: catalog.Env{Print: out.print}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	done := make(chan pump.Event, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	thread, err := o.Pump.Send(ctx, "console", "greeter", &hello.Greeting{Name: "Dan"}, pump.OutletFunc(func(e pump.Event) {
		done <- e
	}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-out.ch:
		if line != "[shouter] HELLO, DAN!" {
			t.Fatalf("printed %q", line)
		}
	case <-ctx.Done():
		t.Fatal("no shouted greeting")
	}
	for {
		select {
		case e := <-done:
			if e.Kind == pump.EventComplete {
				if e.Conversation != thread {
					t.Fatalf("completion for %s, want %s", e.Conversation, thread)
				}
				return
			}
			t.Logf("event %s %s", e.Kind, e.Error)
		case <-ctx.Done():
			t.Fatal("conversation never completed")
		}
	}
}
