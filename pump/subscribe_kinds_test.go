package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestSubscribeKinds: an observer subscribed to some kinds of events gets
// those only, after the journal committed what they name, while an
// observer of every event still gets them all.
func TestSubscribeKinds(t *testing.T) {
	j := newHeldJournal()
	pr := newProbe()
	p := startPump(t, pump.Options{Journal: j}, sink[Ping](t, "sink", pr))
	some, all := newRecorder(), newRecorder()
	defer p.SubscribeKinds(some, pump.EventComplete)()
	defer p.Subscribe(all)()

	acked := make(chan error, 1)
	go func() {
		_, err := p.InjectWait(context.Background(), envelope(client, "sink", stage.NewThreadID(), `<Ping xmlns=""><Text>hi</Text></Ping>`), nil)
		acked <- err
	}()
	pr.next(t)
	if es := some.snapshot(); len(es) != 0 {
		t.Fatalf("subscriber got %s before anything was committed", describe(es))
	}
	j.commitAll()
	if err := <-acked; err != nil {
		t.Fatalf("InjectWait: %v", err)
	}
	some.waitFor(t, "complete", kind(pump.EventComplete))
	all.waitFor(t, "complete", kind(pump.EventComplete))
	if es := some.snapshot(); len(es) != 1 || es[0].Kind != pump.EventComplete {
		t.Fatalf("kinds subscriber got %s, want complete only", describe(es))
	}
	if es := all.snapshot(); len(es) != 2 || es[0].Kind != pump.EventMessage {
		t.Fatalf("subscriber of all got %s, want message then complete", describe(es))
	}
}

// TestSubscribeKindsAfterCancel: an observer of every event that left
// (cancelled twice: the second is a no-op) gets nothing, and the kinds
// subscriber left still gets its kind only once committed.
func TestSubscribeKindsAfterCancel(t *testing.T) {
	j := newHeldJournal()
	pr := newProbe()
	p := startPump(t, pump.Options{Journal: j}, sink[Ping](t, "sink", pr))
	some, all := newRecorder(), newRecorder()
	defer p.SubscribeKinds(some, pump.EventComplete)()
	cancelAll := p.Subscribe(all)
	cancelAll()
	cancelAll() // twice: no effect
	go func() {
		_, _ = p.InjectWait(context.Background(), envelope(client, "sink", stage.NewThreadID(), `<Ping xmlns=""><Text>hi</Text></Ping>`), nil)
	}()
	pr.next(t)
	ran := make(chan struct{})
	p.AfterDurable(func() { close(ran) })
	if es := some.snapshot(); len(es) != 0 {
		t.Fatalf("kinds subscriber got %s before the commit", describe(es))
	}
	j.commitAll()
	<-ran
	some.waitFor(t, "complete", kind(pump.EventComplete))
	if es := all.snapshot(); len(es) != 0 {
		t.Fatalf("a cancelled subscriber got %s", describe(es))
	}
}
