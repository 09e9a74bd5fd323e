package oob

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// haltAck is the acknowledgement of a halt of everything; the counts depend
// on what the organism was doing (its boot message may still be in flight).
var haltAck = regexp.MustCompile(`^halted \(all\): \d+ running calls cancelled \(their messages wait for the resume\), \d+ queued messages held$`)

func TestHaltAndResumeOverOOB(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.do(t, `<halt/>`); r.Payload.Error == nil || r.Payload.Error.Code != CodeNotSupported {
		t.Fatalf("halt without a halter: %+v", r.Payload)
	}
	f = newFixture(t, func(o *Options) { o.Target.Halter = nil })
	f.srv.ops.t.Halter = f.org.Governance()
	r := f.do(t, `<halt><scope>all</scope><reason>runaway</reason></halt>`)
	if r.Payload.Ack == nil || !r.Payload.Ack.Success || !haltAck.MatchString(r.Payload.Ack.Message) {
		t.Fatalf("halt: %+v", r.Payload)
	}
	if scope, ok := f.org.Pump.Halted(); !ok || scope != pump.HaltAll {
		t.Fatalf("pump halted %v %v", scope, ok)
	}
	if s := f.do(t, `<get-status/>`).Payload.Status; s == nil || s.State != "halted" {
		t.Fatalf("status %+v", s)
	}
	if r := f.do(t, `<resume><reason>all clear</reason></resume>`); r.Payload.Ack == nil || r.Payload.Ack.Message != "resumed" {
		t.Fatalf("resume: %+v", r.Payload)
	}
	if _, ok := f.org.Pump.Halted(); ok {
		t.Fatal("still halted")
	}
	if r := f.do(t, `<resume/>`); r.Payload.Ack == nil || r.Payload.Ack.Message != "not halted" {
		t.Fatalf("second resume: %+v", r.Payload)
	}
	if s := f.do(t, `<get-status/>`).Payload.Status; s.State != "running" {
		t.Fatalf("status %+v", s)
	}
}

// One listener halted over OOB: <halt><listener>, an unknown name is
// NOT_FOUND, a scope beside it INVALID_ARGUMENT; <resume><listener> lifts
// it alone.
func TestHaltListenerOverOOB(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Target.Halter = nil })
	f.srv.ops.t.Halter = f.org.Governance()
	if r := f.do(t, `<halt><listener>nobody</listener></halt>`); r.Payload.Error == nil || r.Payload.Error.Code != CodeNotFound {
		t.Fatalf("halt of an unknown listener: %+v", r.Payload)
	}
	if r := f.do(t, `<halt><scope>all</scope><listener>shouter</listener></halt>`); r.Payload.Error == nil ||
		r.Payload.Error.Code != CodeInvalidArgument {
		t.Fatalf("halt with a scope and a listener: %+v", r.Payload)
	}
	r := f.do(t, `<halt><listener>shouter</listener><reason>loops</reason></halt>`)
	if r.Payload.Ack == nil || !r.Payload.Ack.Success ||
		!regexp.MustCompile(`^halted listener shouter: \d+ running calls cancelled`).MatchString(r.Payload.Ack.Message) {
		t.Fatalf("halt: %+v", r.Payload)
	}
	if got := f.org.Pump.HaltedListeners(); len(got) != 1 || got[0] != "shouter" {
		t.Fatalf("halted listeners %v", got)
	}
	if _, ok := f.org.Pump.Halted(); ok {
		t.Fatal("the organism reads halted")
	}
	// get-status names it, as REST /api/v1/organism's halted_listeners and
	// the console's /status do: "running" alone hid a halted agent.
	if s := f.do(t, `<get-status/>`).Payload.Status; s == nil || s.State != "running" ||
		!cmp.Equal(s.HaltedListeners, []string{"shouter"}) {
		t.Fatalf("get-status with shouter halted: %+v", s)
	}
	if r := f.do(t, `<resume><listener>greeter</listener></resume>`); r.Payload.Ack == nil || r.Payload.Ack.Message != "greeter was not halted" {
		t.Fatalf("resume of greeter: %+v", r.Payload)
	}
	if r := f.do(t, `<resume><listener>shouter</listener></resume>`); r.Payload.Ack == nil || r.Payload.Ack.Message != "resumed shouter" {
		t.Fatalf("resume: %+v", r.Payload)
	}
	if got := f.org.Pump.HaltedListeners(); len(got) != 0 {
		t.Fatalf("halted listeners after the resume %v", got)
	}
	if s := f.do(t, `<get-status/>`).Payload.Status; s == nil || len(s.HaltedListeners) != 0 {
		t.Fatalf("get-status after the resume: %+v", s)
	}
}
