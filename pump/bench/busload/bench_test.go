package busload

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// helloWorld builds the repository's hello-world organism.
func helloWorld(o organism.Options) (*organism.Organism, error) {
	return organism.Load("../../../organism.yaml", o)
}

// TestRunMeasuresReplies runs the bus bench with a few clients for about a
// second, closed and open loop, and checks it measured real conversations:
// every send acknowledged and answered, none lost.
func TestRunMeasuresReplies(t *testing.T) {
	tests := []struct {
		name          string
		rate          float64
		inMemory      bool
		clientThreads bool // each conversation on a thread id the client chose
	}{
		{"closed loop", 0, false, false},
		{"open loop", 200, false, false},
		{"in memory", 0, true, false},
		{"client threads", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Build: helloWorld, InMemory: tt.inMemory,
				Load: LoadConfig{Clients: 4, Duration: time.Second, Rate: tt.rate, ClientThreads: tt.clientThreads}})
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + r.String())
			if r.Replies == 0 || r.RepliesPerSec <= 0 || r.P50ms <= 0 || r.MaxMs < r.P99ms || r.CPUPerReplyUs <= 0 || r.AllocsPerReply <= 0 ||
				r.Durable == tt.inMemory {
				t.Errorf("implausible result: %+v", r)
			}
			if r.Lost != 0 || r.Errors != 0 || r.Refused != 0 || r.WrongReply != 0 {
				t.Errorf("lost %d, errors %d, refused %d, wrong %d: %v", r.Lost, r.Errors, r.Refused, r.WrongReply,
					r.FirstErrors)
			}
			if r.Acked != r.Sent || r.Replies != r.Sent {
				t.Errorf("sent %d, acked %d, replies %d: want all equal", r.Sent, r.Acked, r.Replies)
			}
			// Subscribed to output frames: each conversation is its "sent"
			// and its output. The sockets' "connected" and "subscribed"
			// frames (and upgrade responses) come before the load phase
			// and are no reply's cost. A write carries one frame or more.
			frames := int64(math.Round(r.FramesPerReply * float64(r.Replies)))
			writes := int64(math.Round(r.WritesPerReply * float64(r.Replies)))
			if want := 2 * r.Replies; frames != want {
				t.Errorf("%d frames for %d replies, want %d", frames, r.Replies, want)
			}
			if writes <= 0 || writes > frames {
				t.Errorf("%d network writes for %d frames", writes, frames)
			}
		})
	}
}

// TestRunLoadPhase checks that Config.LoadPhase brackets the load phase:
// called once, before any request is acknowledged (every client is
// connected, none has sent), and its end called once, after the last
// reply, so that a profile taken between them is the replies' alone.
func TestRunLoadPhase(t *testing.T) {
	var (
		mu                 sync.Mutex
		starts, ends       int
		acksBefore, acksIn int
		started, ended     bool
	)
	load := LoadConfig{Clients: 4, Duration: 500 * time.Millisecond, Acked: func(int, string, string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !started:
			acksBefore++
		case !ended:
			acksIn++
		}
	}}
	r, err := Run(context.Background(), Config{Build: helloWorld, InMemory: true, Load: load, LoadPhase: func() func() {
		mu.Lock()
		defer mu.Unlock()
		starts++
		started = true
		return func() {
			mu.Lock()
			defer mu.Unlock()
			ends++
			ended = true
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if starts != 1 || ends != 1 {
		t.Errorf("load phase started %d times, ended %d times, want once each", starts, ends)
	}
	if acksBefore != 0 || int64(acksIn) != r.Acked || r.Acked == 0 {
		t.Errorf("%d acks before the load phase, %d in it, %d in all: want all of them in it", acksBefore, acksIn, r.Acked)
	}
}
