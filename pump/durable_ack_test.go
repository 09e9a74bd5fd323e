package pump_test

import (
	"context"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// heldJournal is a DurableJournal whose commits the test makes by hand:
// records get seqs at once, and are durable only up to what commit allowed.
type heldJournal struct {
	mu        sync.Mutex
	assigned  int64
	durable   int64
	advance   chan struct{}
	delivered []int64
}

func newHeldJournal() *heldJournal { return &heldJournal{advance: make(chan struct{})} }

func (j *heldJournal) Record(r pump.Record) { j.RecordSeq(r) }

func (j *heldJournal) RecordSeq(pump.Record) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.assigned++
	return j.assigned
}

func (j *heldJournal) Delivered(seq int64) {
	j.mu.Lock()
	j.delivered = append(j.delivered, seq)
	j.mu.Unlock()
}

func (j *heldJournal) Assigned() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.assigned
}

func (j *heldJournal) WaitDurable(ctx context.Context, seq int64) error {
	for {
		j.mu.Lock()
		d, ch := j.durable, j.advance
		j.mu.Unlock()
		if d >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// commitAll makes everything assigned so far durable.
func (j *heldJournal) commitAll() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.durable = j.assigned
	close(j.advance)
	j.advance = make(chan struct{})
}

// TestDurableAcknowledgement: with a journal that commits later, InjectWait
// does not return, and no event reaches an outlet or a subscriber, before
// the journal has committed what they name; then all arrive, in order.
func TestDurableAcknowledgement(t *testing.T) {
	j := newHeldJournal()
	pr := newProbe()
	p := startPump(t, pump.Options{Journal: j}, sink[Ping](t, "sink", pr))
	sub := newRecorder()
	defer p.Subscribe(sub)()

	acked := make(chan error, 1)
	go func() {
		_, err := p.InjectWait(context.Background(), envelope(client, "sink", stage.NewThreadID(), `<Ping xmlns=""><Text>hi</Text></Ping>`), nil)
		acked <- err
	}()
	pr.next(t) // the handler ran: the pump went on without waiting
	select {
	case err := <-acked:
		t.Fatalf("InjectWait returned (%v) before the journal committed the message", err)
	default:
	}
	if es := sub.snapshot(); len(es) != 0 {
		t.Fatalf("subscriber got %s before anything was committed", describe(es))
	}
	j.commitAll()
	if err := <-acked; err != nil {
		t.Fatalf("InjectWait: %v", err)
	}
	sub.waitFor(t, "complete", kind(pump.EventComplete))
	es := sub.snapshot()
	if len(es) != 2 || es[0].Kind != pump.EventMessage || es[1].Kind != pump.EventComplete {
		t.Fatalf("events = %s, want message then complete", describe(es))
	}
	held := make(chan struct{})
	p.AfterDurable(func() { close(held) })
	<-held // nothing new was journaled: runs without another commit
}
