package oob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// heldHelloYAML is the hello-world organism with greeter's calls to
// shouter waiting for a human.
const heldHelloYAML = `
organism: {name: held-hello}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
    agent: true
    peers: [shouter]
    approval: [shouter]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
    agent: true
    peers: [response-handler]
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints
`

// governanceApprover is the Approver xmlpipe run gives the channel, over
// the organism's governance.
type governanceApprover struct{ g *organism.Governance }

func (a governanceApprover) Approvals(ctx context.Context, q ApprovalQuery) ([]Approval, error) {
	as, err := a.g.Approvals(ctx, organism.ApprovalFilter{Status: q.Status, Thread: q.Thread, Limit: q.Limit, After: q.After})
	out := make([]Approval, len(as))
	for i, x := range as {
		out[i] = toOOB(x)
	}
	return out, err
}

func toOOB(x organism.Approval) Approval {
	a := Approval{ID: x.ID, Kind: x.Kind, Status: x.Status, Agent: x.Agent, Target: x.Target, ThreadID: x.Conversation,
		User: x.User, RequestReason: x.RequestReason, Envelope: x.Payload, CreatedAt: x.CreatedAt, ExpiresAt: x.ExpiresAt,
		DecidedBy: x.DecidedBy, Reason: x.Reason}
	if !x.DecidedAt.IsZero() {
		a.DecidedAt = &x.DecidedAt
	}
	return a
}

func (a governanceApprover) Decide(ctx context.Context, id string, approve bool, by, reason string) (Approval, error) {
	x, err := a.g.Decide(ctx, id, approve, by, reason)
	switch {
	case errors.Is(err, organism.ErrApprovalNotFound):
		return Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, id)
	case errors.Is(err, organism.ErrApprovalDecided):
		return Approval{}, &DecidedError{Message: err.Error()}
	case err != nil:
		return Approval{}, err
	}
	return toOOB(x), nil
}

// The owner lists the calls waiting for a human and decides them over the
// channel, as an operator does over REST or the console: an organism
// without users (a federation peer) has no other way to let one through.
func TestApprovalsOverOOB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(heldHelloYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureFrom(t, path, nil)
	if r := f.do(t, `<list-approvals/>`); code(r) != CodeNotSupported {
		t.Fatalf("list-approvals without an approver: %+v", r.Payload)
	}
	f.srv.ops.t.Approver = governanceApprover{f.org.Governance()}

	inject := func(name string) string {
		t.Helper()
		r := f.do(t, `<inject-message><to>greeter</to><payload><Greeting xmlns=""><Name>`+name+`</Name></Greeting></payload></inject-message>`)
		if r.Payload.ThreadCreated == nil {
			t.Fatalf("inject: %+v", r.Payload)
		}
		return r.Payload.ThreadCreated.ThreadID
	}
	pending := func(thread string) Approval {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			r := f.do(t, `<list-approvals><status>pending</status><thread-id>`+thread+`</thread-id></list-approvals>`)
			if r.Payload.Approvals == nil {
				t.Fatalf("list-approvals: %+v", r.Payload)
			}
			if as := r.Payload.Approvals.Approvals; len(as) == 1 {
				return as[0]
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no approval pending in %s", thread)
		return Approval{}
	}

	ada := inject("Ada")
	a := pending(ada)
	got := Approval{Kind: a.Kind, Status: a.Status, Agent: a.Agent, Target: a.Target, ThreadID: a.ThreadID,
		RequestReason: a.RequestReason, Payload: a.Payload}
	want := Approval{Kind: "tool", Status: "pending", Agent: "greeter", Target: "shouter", ThreadID: ada,
		RequestReason: "greeter's calls to shouter wait for a human (approval list)",
		Payload:       "<GreetingResponse><Message>Hello, Ada!</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pending approval (-want +got):\n%s", diff)
	}
	if a.CreatedAt.IsZero() || !a.ExpiresAt.After(a.CreatedAt) {
		t.Errorf("times: created %v, expires %v", a.CreatedAt, a.ExpiresAt)
	}

	r := f.do(t, `<decide-approval><id>`+a.ID+`</id><decision>approve</decision><reason>fine</reason></decide-approval>`)
	if r.Payload.Approvals == nil || len(r.Payload.Approvals.Approvals) != 1 {
		t.Fatalf("decide-approval: %+v", r.Payload)
	}
	if d := r.Payload.Approvals.Approvals[0]; d.Status != "approved" || d.DecidedBy != "oob" || d.Reason != "fine" || d.DecidedAt == nil {
		t.Errorf("decided approval %+v", d)
	}
	select {
	case line := <-f.printed:
		if !strings.Contains(line, "HELLO, ADA!") {
			t.Errorf("printed %q", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the approved call never reached its end")
	}

	r = f.do(t, `<decide-approval><id>`+a.ID+`</id><decision>deny</decision><reason>too late</reason></decide-approval>`)
	if code(r) != CodeDecided || r.Payload.Error.Message != "approval "+a.ID+" was approved already by oob (fine)" {
		t.Errorf("deciding again: %+v", r.Payload.Error)
	}
	if r := f.do(t, `<decide-approval><id>000000000000</id><decision>deny</decision></decide-approval>`); code(r) != CodeNotFound {
		t.Errorf("deciding an unknown approval: %+v", r.Payload)
	}

	bob := inject("Bob")
	b := pending(bob)
	if r := f.do(t, `<decide-approval><id>`+b.ID+`</id><decision>deny</decision><reason>not now</reason></decide-approval>`); r.Payload.Approvals == nil ||
		r.Payload.Approvals.Approvals[0].Status != "denied" {
		t.Fatalf("deny: %+v", r.Payload)
	}
	r = f.do(t, `<list-approvals><status>denied</status></list-approvals>`)
	if r.Payload.Approvals == nil || r.Payload.Approvals.Count != 1 || r.Payload.Approvals.Approvals[0].ID != b.ID {
		t.Errorf("denied approvals: %+v", r.Payload.Approvals)
	}
	r = f.do(t, `<list-approvals><status>all</status></list-approvals>`)
	if r.Payload.Approvals == nil || r.Payload.Approvals.Count != 2 {
		t.Fatalf("every approval: %+v", r.Payload.Approvals)
	}
	all := r.Payload.Approvals.Approvals
	// A page at a time: next names the page's last, after it the rest.
	r = f.do(t, `<list-approvals><status>all</status><limit>1</limit></list-approvals>`)
	if p := r.Payload.Approvals; p == nil || p.Count != 1 || p.Approvals[0].ID != all[0].ID || p.Next != all[0].ID {
		t.Fatalf("first page of one: %+v", r.Payload.Approvals)
	}
	r = f.do(t, `<list-approvals><status>all</status><limit>1</limit><after>`+all[0].ID+`</after></list-approvals>`)
	if p := r.Payload.Approvals; p == nil || p.Count != 1 || p.Approvals[0].ID != all[1].ID || p.Next != "" {
		t.Errorf("second page of one: %+v", r.Payload.Approvals)
	}
}
