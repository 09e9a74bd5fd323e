package organism

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// The kinds of approval the organism creates itself. Other kinds (memory
// consent, say) are requested with Governance.Request and settled by the
// function Governance.HandleKind registers for them.
const (
	// KindTool: a call to a tool or peer named in its sender's approval
	// list.
	KindTool = "tool"
	// KindReview: a message a constitution rule sends to a human.
	KindReview = "review"
)

// The statuses of an approval.
const (
	StatusPending  = store.ApprovalPending
	StatusApproved = store.ApprovalApproved
	StatusDenied   = store.ApprovalDenied
	StatusExpired  = store.ApprovalExpired
)

// ApprovalTimedOut is the reason of an approval that expired because
// nobody decided it in time, and of the refusal its sender gets.
const ApprovalTimedOut = "approval timed out"

// Approval errors.
var (
	// ErrApprovalNotFound: no approval has that id.
	ErrApprovalNotFound = errors.New("organism: no such approval")
	// ErrApprovalDecided: the approval was decided already (or expired).
	ErrApprovalDecided = errors.New("organism: approval already decided")
)

// DecidedError is the answer to a decision about an approval that is not
// pending any more: it says how that one ended — approved or denied by
// whom, or expired and why (timed out, its conversation killed). It wraps
// ErrApprovalDecided.
type DecidedError struct {
	// Approval is the approval as it ended.
	Approval Approval
}

// Error says how the approval ended, e.g. "approval 3f… expired (approval
// timed out)" or "approval 3f… was approved already by alice".
func (e *DecidedError) Error() string {
	a := e.Approval
	var b strings.Builder
	b.WriteString("approval " + a.ID)
	if a.Status == StatusExpired {
		b.WriteString(" expired")
	} else {
		b.WriteString(" was " + a.Status + " already")
		if a.DecidedBy != "" {
			b.WriteString(" by " + a.DecidedBy)
		}
	}
	if a.Reason != "" {
		b.WriteString(" (" + a.Reason + ")")
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrApprovalDecided) hold.
func (e *DecidedError) Unwrap() error { return ErrApprovalDecided }

// Approval is something waiting for a human — a held call, a message a
// constitution rule sends to review — or decided by one.
type Approval struct {
	// ID names it (in /approve ID and POST /api/v1/approvals/{id}).
	ID string
	// Kind is KindTool, KindReview or a kind of Request.
	Kind string
	// Seq is the journal seq of the held message (0: none).
	Seq int64
	// Conversation and Thread are where it waits.
	Conversation, Thread string
	// Agent is who asks (the held message's sender), Target what it waits
	// to reach.
	Agent, Target string
	// User is whose conversation it waits in: the user who began it (""
	// for the organism's own traffic). An approval of a private kind
	// (memory) is theirs: see VisibleTo.
	User string
	// Payload is the held message's canonical envelope (or what a Request
	// asks about).
	Payload string
	// RequestReason says why it waits; Rules are the ids of the rules that
	// sent it to review.
	RequestReason string
	Rules         []string
	// Suggestion is the rules' suggestion (review), for the refusal.
	Suggestion string
	// Severity is the rules' severity (review), for the refusal.
	Severity string
	// CreatedAt is when it began waiting, ExpiresAt when it times out.
	CreatedAt, ExpiresAt time.Time
	// Status is StatusPending, StatusApproved, StatusDenied or
	// StatusExpired.
	Status string
	// DecidedBy, Reason and DecidedAt record the decision ("" by for a
	// timeout or a killed conversation).
	DecidedBy, Reason string
	DecidedAt         time.Time
}

// Call is what a waits to let through as a human reads it: the payload
// element of the held envelope — a tool call's arguments — without the
// xmlns="" a payload of no namespace carries inside the envelope; Payload
// as it is when it is no canonical envelope.
func (a Approval) Call() string {
	p, ok := stage.EnvelopePayload([]byte(a.Payload))
	if !ok {
		return a.Payload
	}
	s := string(p)
	if name, rest, found := strings.Cut(s, " "); found && !strings.Contains(name, ">") {
		if tail, ok := strings.CutPrefix(rest, `xmlns=""`); ok {
			return name + tail
		}
	}
	return s
}

// Refusal is the structured refusal the sender gets when a is denied or
// expires: "denied by <user>: <reason>", or the expiry's reason.
func (a Approval) Refusal() *xmlpipe.Refusal {
	reason := a.Reason
	sev := a.Severity
	if sev == "" {
		sev = stage.SeverityMedium
	}
	switch {
	case a.Status == StatusDenied:
		reason = "denied by " + a.DecidedBy
		if a.Reason != "" {
			reason += ": " + a.Reason
		}
	case reason == "":
		reason = ApprovalTimedOut
		fallthrough
	case a.Severity == "":
		// Nobody decided (a timeout): no rule's severity, and no finding
		// about the call itself.
		sev = stage.SeverityLow
	}
	return stage.NewRefusal(reason, a.Suggestion, sev, a.Rules...)
}

// rowOf and approvalOf convert to and from the store's row.
func rowOf(a Approval) store.ApprovalRow {
	return store.ApprovalRow{ID: a.ID, Seq: a.Seq, Conversation: a.Conversation, Thread: a.Thread, Agent: a.Agent,
		Target: a.Target, Kind: a.Kind, Payload: a.Payload, RequestReason: a.RequestReason, Rules: a.Rules,
		Suggestion: a.Suggestion, Severity: a.Severity,
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, Status: a.Status, DecidedBy: a.DecidedBy, Reason: a.Reason,
		DecidedAt: a.DecidedAt, Owner: a.User}
}

func approvalOf(r store.ApprovalRow) Approval {
	return Approval{ID: r.ID, Seq: r.Seq, Conversation: r.Conversation, Thread: r.Thread, Agent: r.Agent, Target: r.Target,
		Kind: r.Kind, Payload: r.Payload, RequestReason: r.RequestReason, Rules: r.Rules, Suggestion: r.Suggestion,
		Severity: r.Severity, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Status: r.Status, DecidedBy: r.DecidedBy,
		Reason: r.Reason, DecidedAt: r.DecidedAt, User: r.Owner}
}

// privateKinds are the kinds of approval that belong to the user whose
// conversation they wait in: a memory is what an agent keeps about that
// user (what they told it, what they prefer), personal to them.
var privateKinds = []string{KindMemory}

// VisibleTo reports whether user (an admin when admin) may see and decide
// a: an admin any; anyone else every approval but one of a private kind
// (memory consent) of another user's conversation — or of the organism's
// own traffic, which no user owns.
func (a Approval) VisibleTo(user string, admin bool) bool {
	return !slices.Contains(privateKinds, a.Kind) || MemoryReadable(a.User, user, admin)
}

// ApprovalViewer is who lists approvals, for ApprovalFilter.Viewer.
type ApprovalViewer struct {
	// User is their name; Admin whether they have the admin role.
	User  string
	Admin bool
}

// ApprovalFilter selects approvals; empty fields match everything.
type ApprovalFilter struct {
	// Status is one status.
	Status string
	// Thread matches an approval's thread or conversation.
	Thread string
	// Limit caps the result (0: DefaultApprovalLimit); newest first.
	Limit int
	// After, when set, keeps the approvals that come after approval After
	// in that order (newest first, then by id): the cursor of the next
	// page. None come after an id no approval has.
	After string
	// Viewer, when set, keeps the approvals Viewer may see
	// (Approval.VisibleTo); nil keeps every one (the organism's own
	// operator, in process).
	Viewer *ApprovalViewer
}

// DefaultApprovalLimit is how many approvals a List returns at most unless
// asked for another number.
const DefaultApprovalLimit = 500

// maxRecent bounds the decided approvals an organism without a store keeps.
const maxRecent = 1024

// approvalBook keeps the approvals: the pending ones in memory (with their
// timers), every one in the store when the organism has one, the latest
// decided ones in memory otherwise.
type approvalBook struct {
	store *store.Store
	mu    sync.Mutex
	// pending are the approvals waiting, by id; timers their expiries.
	pending map[string]*Approval
	timers  map[string]*time.Timer
	// recent are decided approvals, newest last (all of them without a
	// store, bounded; with one, those decided by this process, bounded).
	recent []Approval
	// expire is what a pending approval's timer calls (the one add and
	// load were given): an approval whose decision could not be recorded
	// is pending again, and times out again.
	expire func(id string)
	// deciding are the approvals whose decision is being recorded, by id:
	// a second decision about one waits for the first to end, so it learns
	// how it ended rather than reading it still pending or missing.
	deciding map[string]*decision
}

// decision is a decision being recorded; done is closed when it is (or
// when recording it failed and the approval is pending again).
type decision struct {
	approval Approval
	done     chan struct{}
}

func newApprovalBook(s *store.Store) *approvalBook {
	return &approvalBook{store: s, pending: map[string]*Approval{}, timers: map[string]*time.Timer{},
		deciding: map[string]*decision{}}
}

// add records a new pending approval (the store write is queued).
func (b *approvalBook) add(a Approval, expire func(id string)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.pending[a.ID]; dup {
		return nil
	}
	if _, dup := b.deciding[a.ID]; dup {
		return nil
	}
	if b.store != nil {
		if err := b.store.PutApproval(rowOf(a)); err != nil {
			return err
		}
	}
	b.watch(&a, expire)
	return nil
}

// watch keeps a pending and arms its timer (b.mu held).
func (b *approvalBook) watch(a *Approval, expire func(id string)) {
	b.expire = expire
	b.pending[a.ID] = a
	if a.ExpiresAt.IsZero() {
		return
	}
	id := a.ID
	b.timers[id] = time.AfterFunc(max(time.Until(a.ExpiresAt), 0), func() { expire(id) })
}

// find returns the approval id: pending, decided by this process, or
// stored.
func (b *approvalBook) find(ctx context.Context, id string) (Approval, bool, error) {
	b.mu.Lock()
	if a, ok := b.pending[id]; ok {
		defer b.mu.Unlock()
		return *a, true, nil
	}
	if d, ok := b.deciding[id]; ok {
		defer b.mu.Unlock()
		return d.approval, true, nil
	}
	for i := len(b.recent) - 1; i >= 0; i-- {
		if b.recent[i].ID == id {
			a := b.recent[i]
			b.mu.Unlock()
			return a, true, nil
		}
	}
	b.mu.Unlock()
	if b.store == nil {
		return Approval{}, false, nil
	}
	rows, err := b.store.Approvals(ctx, store.ApprovalFilter{ID: id})
	if err != nil || len(rows) == 0 {
		return Approval{}, false, err
	}
	return approvalOf(rows[0]), true, nil
}

// decide moves the pending approval id to status: it records the decision
// (in the store first, waiting for the commit) and returns the decided
// approval. ErrApprovalDecided when it is not pending (decided meanwhile,
// or before a restart), ErrApprovalNotFound when there is none.
func (b *approvalBook) decide(ctx context.Context, id, status, by, reason string, at time.Time) (Approval, error) {
	b.mu.Lock()
	for {
		inflight, ok := b.deciding[id]
		if !ok {
			break
		}
		b.mu.Unlock()
		select {
		case <-inflight.done:
		case <-ctx.Done():
			return Approval{}, fmt.Errorf("organism: wait for another decision about approval %s: %w", id, ctx.Err())
		}
		b.mu.Lock()
	}
	a, ok := b.pending[id]
	if !ok {
		b.mu.Unlock()
		if d, found, err := b.find(ctx, id); err != nil {
			return Approval{}, err
		} else if found {
			return Approval{}, &DecidedError{Approval: d}
		}
		return Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, id)
	}
	delete(b.pending, id)
	if t := b.timers[id]; t != nil {
		t.Stop()
		delete(b.timers, id)
	}
	d := *a
	d.Status, d.DecidedBy, d.Reason, d.DecidedAt = status, by, reason, at
	inflight := &decision{approval: *a, done: make(chan struct{})}
	b.deciding[id] = inflight
	b.mu.Unlock()
	ended := func(pending *Approval, decided *Approval) {
		b.mu.Lock()
		delete(b.deciding, id)
		if pending != nil {
			b.watch(pending, b.expire)
		}
		if decided != nil {
			b.recent = append(b.recent, *decided)
			if len(b.recent) > maxRecent {
				b.recent = slices.Delete(b.recent, 0, len(b.recent)-maxRecent)
			}
		}
		close(inflight.done)
		b.mu.Unlock()
	}
	if b.store != nil {
		// Once taken out of pending, the decision is recorded whether or
		// not its requester still waits: given up half way, its write
		// could commit after all and leave it decided there, pending here.
		if err := b.store.DecideApproval(context.WithoutCancel(ctx), id, status, by, reason, at); err != nil {
			if errors.Is(err, store.ErrDecided) {
				ended(nil, nil)
				if rows, ferr := b.store.Approvals(ctx, store.ApprovalFilter{ID: id}); ferr == nil && len(rows) == 1 {
					return Approval{}, &DecidedError{Approval: approvalOf(rows[0])}
				}
				return Approval{}, fmt.Errorf("%w: %s", ErrApprovalDecided, id)
			}
			if !errors.Is(err, store.ErrNotFound) {
				// Not recorded: it stays pending, to be decided again.
				ended(a, nil)
				return Approval{}, fmt.Errorf("organism: record the decision about approval %s: %w", id, err)
			}
		}
	}
	ended(nil, &d)
	return d, nil
}

// list returns the approvals f selects, newest first.
func (b *approvalBook) list(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultApprovalLimit
	}
	if b.store != nil {
		// Pending ones whose insert is still queued show too: flush first.
		if err := b.store.Flush(ctx); err != nil && !errors.Is(err, store.ErrWriteFailed) {
			return nil, err
		}
		sf := store.ApprovalFilter{Status: f.Status, Thread: f.Thread, Limit: limit, After: f.After}
		if v := f.Viewer; v != nil && !v.Admin {
			sf.PrivateKinds, sf.Owner = privateKinds, v.User
		}
		rows, err := b.store.Approvals(ctx, sf)
		if err != nil {
			return nil, err
		}
		out := make([]Approval, len(rows))
		for i, r := range rows {
			out[i] = approvalOf(r)
		}
		return out, nil
	}
	b.mu.Lock()
	all := make([]Approval, 0, len(b.pending)+len(b.deciding)+len(b.recent))
	for _, a := range b.pending {
		all = append(all, *a)
	}
	for _, d := range b.deciding {
		all = append(all, d.approval) // pending until its decision is recorded
	}
	all = append(all, b.recent...)
	b.mu.Unlock()
	slices.SortStableFunc(all, func(x, y Approval) int {
		return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), cmp.Compare(x.ID, y.ID)) // as the store orders them
	})
	if f.After != "" {
		i := slices.IndexFunc(all, func(a Approval) bool { return a.ID == f.After })
		if i < 0 {
			return nil, nil
		}
		all = all[i+1:]
	}
	out := all[:0]
	for _, a := range all {
		if (f.Status == "" || a.Status == f.Status) && (f.Thread == "" || a.Thread == f.Thread || a.Conversation == f.Thread) &&
			(f.Viewer == nil || a.VisibleTo(f.Viewer.User, f.Viewer.Admin)) {
			out = append(out, a)
		}
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// pendingList lists the pending approvals.
func (b *approvalBook) pendingList() []Approval {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Approval, 0, len(b.pending))
	for _, a := range b.pending {
		out = append(out, *a)
	}
	return out
}

// load reads the pending approvals from the store (at start) and arms
// their timers; one past its time expires at once.
func (b *approvalBook) load(ctx context.Context, expire func(id string)) (int, error) {
	if b.store == nil {
		return 0, nil
	}
	rows, err := b.store.Approvals(ctx, store.ApprovalFilter{Status: StatusPending})
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rows {
		a := approvalOf(r)
		b.watch(&a, expire)
	}
	return len(rows), nil
}

// stop stops the timers (shutdown): pending approvals stay pending in the
// store.
func (b *approvalBook) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, t := range b.timers {
		t.Stop()
		delete(b.timers, id)
	}
}
