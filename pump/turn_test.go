package pump_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// pongs is raw output holding n Pong payloads between prose, plus extra.
func pongs(n int, extra string) []byte {
	var b strings.Builder
	b.WriteString("Sending them now.\n")
	for i := range n {
		fmt.Fprintf(&b, "<Pong><Text>%d</Text></Pong>\n", i)
	}
	b.WriteString(extra)
	return []byte(b.String())
}

// fanOut is an agent that answers a Ping with raw output of n Pongs (plus
// extra) and hands every <huh>/SystemError it gets to errs.
func fanOut(t *testing.T, n int, extra string, errs chan<- *xmlpipe.DeliveryError) pump.Listener {
	l := listenerOf(t, "writer", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Raw(pongs(n, extra)), nil
	})
	l = withErrorHandler(l, func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		errs <- de
		return nil, nil
	})
	return agent(l, "sink")
}

// TestRawTooManyMessages: a reply holding more payloads than the listener
// may send in one turn sends none of them, and the listener gets a
// SystemError saying the limit — quickly, even for 20,000 payloads.
func TestRawTooManyMessages(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		perTurn   int // the listener's own limit (0: the pump's default)
		delivered int
	}{
		{"20,000 over the default 32", 20000, 0, 0},
		{"the default 32 pass", 32, 0, 32},
		{"4 over a limit of 3", 4, 3, 0},
		{"3 within a limit of 3", 3, 3, 3},
		{"100 within a limit of 100", 100, 100, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := make(chan *xmlpipe.DeliveryError, 4)
			pr := newProbe()
			w := fanOut(t, tc.n, "", errs)
			w.MaxMessagesPerTurn = tc.perTurn
			p := startPump(t, pump.Options{}, w, sink[Pong](t, "sink", pr))
			done := newRecorder()
			t0 := time.Now()
			mustSend(t, p, client, "writer", &Ping{Text: "go"}, done)
			if tc.delivered > 0 {
				for range tc.delivered {
					pr.next(t)
				}
				done.waitFor(t, "complete", kind(pump.EventComplete))
				if len(errs) != 0 {
					t.Fatalf("error %+v", <-errs)
				}
				return
			}
			var de *xmlpipe.DeliveryError
			select {
			case de = <-errs:
			case <-time.After(waitTimeout):
				t.Fatal("no SystemError came back")
			}
			took := time.Since(t0)
			limit := tc.perTurn
			if limit == 0 {
				limit = pump.DefaultMaxMessagesPerTurn
			}
			want := fmt.Sprintf("at most %d may be sent per turn", limit)
			if de.System == nil || de.System.Code != "validation" || !strings.Contains(de.System.Message, want) ||
				!strings.Contains(de.System.Message, fmt.Sprint(tc.n)) || !de.System.RetryAllowed {
				t.Fatalf("error %+v %+v, want a SystemError saying %q", de.System, de.Huh, want)
			}
			// The listener and an Ask learn the pump's reason, not only the
			// canned text.
			reason := fmt.Sprintf("%d payload elements in one output, at most %d allowed", tc.n, limit)
			if !strings.Contains(de.Detail, reason) {
				t.Errorf("DeliveryError.Detail %q, want it to say %q", de.Detail, reason)
			}
			done.waitFor(t, "complete", kind(pump.EventComplete))
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if _, err := p.Ask(ctx, client, "writer", &Ping{Text: "go"}); err == nil || !strings.Contains(err.Error(), reason) {
				t.Errorf("Ask: %v, want an error saying %q", err, reason)
			}
			if calls := pr.all(); len(calls) != 0 {
				t.Fatalf("%d of the refused messages were delivered", len(calls))
			}
			t.Logf("%d payloads refused in %v", tc.n, took)
			if took > waitTimeout {
				t.Fatalf("refusal took %v", took)
			}
		})
	}
}

// TestMaxMessagesPerTurnValidated: negative limits are refused.
func TestMaxMessagesPerTurnValidated(t *testing.T) {
	if _, err := pump.New(pump.Options{MaxMessagesPerTurn: -1}); err == nil {
		t.Fatal("a negative MaxMessagesPerTurn was accepted")
	}
	p, err := pump.New(pump.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := sink[Pong](t, "sink", newProbe())
	l.MaxMessagesPerTurn = -1
	if err := p.Register(l); err == nil {
		t.Fatal("a listener with a negative MaxMessagesPerTurn was registered")
	}
}

// groupJournal is a SeqJournal, GroupJournal and DeliveryJournal that keeps
// what it is given; the first RecordGroup waits for release.
type groupJournal struct {
	mu        sync.Mutex
	seq       int64
	singles   []pump.Record
	groups    [][]pump.Record
	delivered []int64
	// grouped is told of each group before it waits for release.
	grouped chan []pump.Record
	release *gate
}

func (j *groupJournal) Record(r pump.Record) { j.RecordSeq(r) }

func (j *groupJournal) RecordSeq(r pump.Record) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.singles = append(j.singles, r)
	return j.seq
}

func (j *groupJournal) RecordGroup(rs []pump.Record) []int64 {
	j.grouped <- rs
	j.release.wait(context.Background())
	j.mu.Lock()
	defer j.mu.Unlock()
	seqs := make([]int64, len(rs))
	for i := range rs {
		j.seq++
		seqs[i] = j.seq
	}
	j.groups = append(j.groups, rs)
	return seqs
}

func (j *groupJournal) Delivered(seq int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.delivered = append(j.delivered, seq)
}

// TestRawTurnJournaledAsOneGroup: the outputs of one handler call pass the
// ingress stages first, then are journaled in one group; nothing of them
// reaches a listener, and the message that produced them is not marked
// delivered, before the group is journaled.
func TestRawTurnJournaledAsOneGroup(t *testing.T) {
	j := &groupJournal{grouped: make(chan []pump.Record, 1), release: newGate()}
	errs := make(chan *xmlpipe.DeliveryError, 4)
	pr := newProbe()
	p := startPump(t, pump.Options{Journal: j}, fanOut(t, 5, "<Nope/>", errs), sink[Pong](t, "sink", pr))
	mustSend(t, p, client, "writer", &Ping{Text: "go"}, nil)
	var group []pump.Record
	select {
	case group = <-j.grouped:
	case <-time.After(waitTimeout):
		t.Fatal("no group was journaled")
	}
	if len(group) != 5 {
		t.Fatalf("group of %d records, want the 5 Pongs", len(group))
	}
	for i, r := range group {
		if r.Kind != pump.RecordMessage || r.From != "writer" || r.Listener != "sink" || r.PayloadTag != "Pong" ||
			!strings.Contains(string(r.Envelope), fmt.Sprintf("<Text>%d</Text>", i)) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	time.Sleep(20 * time.Millisecond) // not a wait for anything: gives a wrongly early hand-off the time to show
	if calls := pr.all(); len(calls) != 0 {
		t.Fatalf("%d outputs reached sink before their group was journaled", len(calls))
	}
	j.mu.Lock()
	pingSeq, delivered := j.singles[0].PayloadTag, len(j.delivered)
	j.mu.Unlock()
	if pingSeq != "Ping" || delivered != 0 {
		t.Fatalf("first record %q, %d marks before the group was journaled", pingSeq, delivered)
	}
	if len(errs) != 0 {
		t.Fatal("the <huh> about <Nope> came back before the group was journaled")
	}
	j.release.open()
	for range 5 {
		pr.next(t)
	}
	select {
	case de := <-errs:
		if de.Huh == nil {
			t.Fatalf("error %+v, want the <huh> about <Nope>", de)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no <huh> about the unknown element")
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		j.mu.Lock()
		marked := slices.Contains(j.delivered, 1)
		j.mu.Unlock()
		if marked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Ping was never marked delivered")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTurnNeverWaitsForASlot: a handler's worker does not wait for an
// ingress slot to run its turn — the slot's holder may be an external
// message waiting for room in that worker's own queue — so with one slot
// and a one-message queue, a burst of messages to an agent whose replies
// are turns still completes.
func TestTurnNeverWaitsForASlot(t *testing.T) {
	j := &groupJournal{grouped: make(chan []pump.Record, 1000), release: newGate()}
	j.release.open()
	pr := newProbe()
	w := fanOut(t, 3, "", make(chan *xmlpipe.DeliveryError, 100))
	w.Workers, w.QueueSize = 1, 1
	p := startPump(t, pump.Options{Journal: j, MaxConcurrentPipelines: 1}, w, sink[Pong](t, "sink", pr))
	const n = 20
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := p.Send(waitCtx(t), client, "writer", &Ping{Text: "go"}, nil)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for range 3 * n {
		pr.next(t)
	}
}
