package oob

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ListApprovals is <list-approvals>: the approvals of Status (pending when
// empty, every one for "all"), of the conversation ThreadID belongs to when
// set, newest first, a page at a time: at most Limit of them (0:
// DefaultApprovalsLimit; at most MaxApprovalsLimit) and no more than
// MaxApprovalsPageBytes of held payloads (a page always holds one); After,
// a page's Next, asks for the page that follows it.
type ListApprovals struct {
	Status   string `xml:"status,omitempty"`
	ThreadID string `xml:"thread-id,omitempty"`
	Limit    int    `xml:"limit,omitempty"`
	After    string `xml:"after,omitempty"`
}

// Pages of list-approvals: each approval carries its held payload (up to
// the organism's message cap, 1 MiB by default), so a page stops at its
// limit or before its payloads, escaped as the frame carries them, pass
// MaxApprovalsPageBytes. They are read from the Approver approvalsChunk at
// a time: what the channel holds at once stays near the page's own size.
const (
	DefaultApprovalsLimit = 100
	MaxApprovalsLimit     = 500
	MaxApprovalsPageBytes = 4 << 20
	approvalsChunk        = 16
)

// DecideApproval is <decide-approval>: the pending approval ID approved or
// denied (Decision approve or deny), with an optional Reason.
type DecideApproval struct {
	ID       string `xml:"id"`
	Decision string `xml:"decision"`
	Reason   string `xml:"reason,omitempty"`
}

// ApprovalsResponse is <approvals>: the answer of list-approvals, and of
// decide-approval (the approval it decided). Next, set when more
// approvals follow the page, is the After of the next page.
type ApprovalsResponse struct {
	Count     int        `xml:"count,attr" json:"count"`
	Next      string     `xml:"next,attr,omitempty" json:"next,omitempty"`
	Approvals []Approval `xml:"approval" json:"approvals"`
}

// Approval is one approval: what waits (or waited) for a human.
type Approval struct {
	// ID names it in decide-approval.
	ID string `xml:"id" json:"id"`
	// Kind is tool, review, memory, …; Status pending, approved, denied
	// or expired.
	Kind   string `xml:"kind" json:"kind"`
	Status string `xml:"status" json:"status"`
	// Agent asks to reach Target.
	Agent  string `xml:"agent" json:"agent"`
	Target string `xml:"target" json:"target"`
	// ThreadID is the conversation it waits in; User the user who began
	// it ("" for the organism's own traffic).
	ThreadID string `xml:"thread-id" json:"thread_id"`
	User     string `xml:"user,omitempty" json:"user,omitempty"`
	// RequestReason says why it waits.
	RequestReason string `xml:"request-reason,omitempty" json:"request_reason,omitempty"`
	// Payload is the held call's payload element as text (its
	// arguments), filled in from Envelope by the channel.
	Payload string `xml:"payload,omitempty" json:"payload,omitempty"`
	// Envelope is the held message's canonical envelope, as the Approver
	// gives it (not sent).
	Envelope string `xml:"-" json:"-"`
	// CreatedAt is when it began waiting, ExpiresAt when it times out.
	CreatedAt time.Time `xml:"created-at" json:"created_at"`
	ExpiresAt time.Time `xml:"expires-at" json:"expires_at"`
	// DecidedBy, Reason and DecidedAt record how it ended.
	DecidedBy string     `xml:"decided-by,omitempty" json:"decided_by,omitempty"`
	Reason    string     `xml:"reason,omitempty" json:"reason,omitempty"`
	DecidedAt *time.Time `xml:"decided-at,omitempty" json:"decided_at,omitempty"`
}

// ApprovalQuery says which approvals an Approver lists.
type ApprovalQuery struct {
	// Status is one status ("" every one).
	Status string
	// Thread keeps the conversation it belongs to ("" every one).
	Thread string
	// Limit caps the result (0: the Approver's default).
	Limit int
	// After, when set, keeps the approvals that come after approval After
	// in the list's order: the cursor of a page.
	After string
}

// Approver lists and decides the approvals of a running organism (xmlpipe
// run adapts *organism.Governance).
type Approver interface {
	// Approvals lists the approvals q asks for, newest first. An After
	// that names no approval fails with an error matching
	// ErrApprovalNotFound.
	Approvals(ctx context.Context, q ApprovalQuery) ([]Approval, error)
	// Decide approves or denies the pending approval id on behalf of by.
	// It fails with an error matching ErrApprovalNotFound, or a
	// *DecidedError when the approval is not pending.
	Decide(ctx context.Context, id string, approve bool, by, reason string) (Approval, error)
}

// ErrApprovalNotFound is an Approver's error for an id that names no
// approval.
var ErrApprovalNotFound = errors.New("no such approval")

// ErrApprovalDecided matches a *DecidedError.
var ErrApprovalDecided = errors.New("approval already decided")

// DecidedError is an Approver's error for an approval that is no longer
// pending; Message says how it ended ("approval 3f… was approved already
// by olga (fine)").
type DecidedError struct {
	Message string
}

func (e *DecidedError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrApprovalDecided) hold.
func (e *DecidedError) Unwrap() error { return ErrApprovalDecided }

// approvalBy is who decides over the channel: its owner.
const approvalBy = "oob"

// approvalTimeout bounds listing or deciding approvals.
const approvalTimeout = 10 * time.Second

// listApprovals answers list-approvals: one page.
func (o *operations) listApprovals(p *Operations) reply {
	if o.t.Approver == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism has no approvals to decide over OOB", "")
	}
	q := p.ListApprovals
	aq := ApprovalQuery{Status: q.Status, Thread: q.ThreadID, After: q.After, Limit: approvalsChunk}
	switch aq.Status {
	case "":
		aq.Status = "pending"
	case "all":
		aq.Status = ""
	}
	limit := cmp.Or(q.Limit, DefaultApprovalsLimit)
	if limit < 1 || limit > MaxApprovalsLimit {
		return o.s.fail(p.ID, CodeInvalidArgument, fmt.Sprintf("list-approvals: limit must be from 1 to %d", MaxApprovalsLimit), "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), approvalTimeout)
	defer cancel()
	out := make([]Approval, 0, min(limit, approvalsChunk))
	size, next := 0, ""
read:
	for {
		as, err := o.t.Approver.Approvals(ctx, aq)
		if errors.Is(err, ErrApprovalNotFound) && aq.After == q.After {
			return o.s.fail(p.ID, CodeInvalidArgument, "list-approvals: after names no approval (want a page's next)", "")
		}
		if err != nil {
			o.s.log.Error("list-approvals", "error", err)
			return o.s.fail(p.ID, CodeInternal, "the approvals could not be read", "")
		}
		for _, a := range as {
			aq.After = a.ID
			a.Payload = heldPayload(a.Envelope)
			n := escapedLen(a.Payload) + escapedLen(a.RequestReason) + escapedLen(a.Reason)
			if len(out) == limit || len(out) > 0 && size+n > MaxApprovalsPageBytes {
				next = out[len(out)-1].ID
				break read
			}
			out = append(out, a)
			size += n
		}
		if len(as) < approvalsChunk {
			break
		}
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{Approvals: &ApprovalsResponse{Count: len(out), Next: next, Approvals: out}})}
}

// escapedLen is the length of s escaped as XML text.
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>':
			n += 3 // &lt; &gt;
		case '&':
			n += 4 // &amp;
		case '"', '\'', '\r', '\n', '\t':
			n += 4 // &#34; &#39; &#xD; &#xA; &#x9;
		}
	}
	return n
}

// decideApproval answers decide-approval.
func (o *operations) decideApproval(p *Operations) reply {
	if o.t.Approver == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism has no approvals to decide over OOB", "")
	}
	d := p.DecideApproval
	if d.Decision != "approve" && d.Decision != "deny" {
		return o.s.fail(p.ID, CodeInvalidArgument, "decide-approval: decision must be approve or deny", "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), approvalTimeout)
	defer cancel()
	a, err := o.t.Approver.Decide(ctx, d.ID, d.Decision == "approve", approvalBy, d.Reason)
	var decided *DecidedError
	switch {
	case errors.Is(err, ErrApprovalNotFound):
		return o.s.fail(p.ID, CodeNotFound, "no approval "+d.ID+": list-approvals lists them", "")
	case errors.As(err, &decided):
		return o.s.fail(p.ID, CodeDecided, decided.Message, "")
	case err != nil:
		o.s.log.Error("decide-approval", "approval", d.ID, "error", err)
		return o.s.fail(p.ID, CodeInternal, "the approval could not be decided", "")
	}
	o.s.log.Warn("approval decided over OOB", "approval", a.ID, "status", a.Status, "agent", a.Agent, "target", a.Target,
		"reason", d.Reason)
	a.Payload = heldPayload(a.Envelope)
	return reply{resp: o.s.response(p.ID, ResponsePayload{Approvals: &ApprovalsResponse{Count: 1, Approvals: []Approval{a}}})}
}

// heldPayload is the payload element of a held envelope, without the
// xmlns="" a payload of no namespace carries inside it; the text as it is
// when it is no canonical envelope.
func heldPayload(env string) string {
	p, ok := stage.EnvelopePayload([]byte(env))
	if !ok {
		return env
	}
	s := string(p)
	if name, rest, found := strings.Cut(s, " "); found && !strings.Contains(name, ">") {
		if tail, ok := strings.CutPrefix(rest, `xmlns=""`); ok {
			return name + tail
		}
	}
	return s
}
