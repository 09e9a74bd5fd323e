package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// approvalsSchema holds the approvals: calls waiting for a
// human (and those decided), so that a waiting call is still waiting after
// a restart and a decided one is not asked for again.
const approvalsSchema = `
CREATE TABLE IF NOT EXISTS approvals (
	id              TEXT    PRIMARY KEY CHECK (id <> ''),
	seq             INTEGER NOT NULL DEFAULT 0,
	conversation    TEXT    NOT NULL DEFAULT '',
	thread          TEXT    NOT NULL DEFAULT '',
	agent           TEXT    NOT NULL,
	target          TEXT    NOT NULL DEFAULT '',
	kind            TEXT    NOT NULL CHECK (kind <> ''),
	payload         TEXT    NOT NULL DEFAULT '',
	request_reason  TEXT    NOT NULL DEFAULT '',
	rules           TEXT    NOT NULL DEFAULT '',
	suggestion      TEXT    NOT NULL DEFAULT '',
	severity        TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	expires_at      INTEGER NOT NULL DEFAULT 0,
	status          TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
	decided_by      TEXT    NOT NULL DEFAULT '',
	reason          TEXT    NOT NULL DEFAULT '',
	decided_at      INTEGER NOT NULL DEFAULT 0,
	owner           TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status, created_at);
CREATE INDEX IF NOT EXISTS approvals_thread ON approvals (thread, created_at);
CREATE INDEX IF NOT EXISTS approvals_conversation ON approvals (conversation, created_at);
`

// The approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// ErrDecided reports a decision about an approval that was decided already.
var ErrDecided = errors.New("store: approval already decided")

// ApprovalRow is one row of the approvals table.
type ApprovalRow struct {
	// ID names the approval (unique).
	ID string
	// Seq is the journal seq of the message it holds (0: none, or not
	// journaled).
	Seq int64
	// Conversation and Thread are where the held message travels.
	Conversation, Thread string
	// Agent is who asked (the sender of the held message); Target the
	// listener it waits to reach.
	Agent, Target string
	// Kind is what waits: "tool", "review", "memory", ….
	Kind string
	// Payload is the held message's canonical envelope (or what else the
	// kind asks about).
	Payload string
	// RequestReason says why it waits for a human; Rules are the ids of
	// the constitution rules that asked for the review.
	RequestReason string
	Rules         []string
	// Suggestion and Severity are the rules' (for the refusal a denial
	// answers with).
	Suggestion, Severity string
	// CreatedAt is when it began waiting, ExpiresAt when the wait times
	// out (zero: never).
	CreatedAt, ExpiresAt time.Time
	// Status is ApprovalPending, ApprovalApproved, ApprovalDenied or
	// ApprovalExpired.
	Status string
	// DecidedBy, Reason and DecidedAt record the decision.
	DecidedBy, Reason string
	DecidedAt         time.Time
	// Owner is the user whose conversation it waits in ("" for the
	// organism's own traffic, and for rows stored before it was kept).
	Owner string
}

// validate checks what the table requires.
func (a *ApprovalRow) validate() error {
	switch {
	case a.ID == "":
		return fmt.Errorf("%w: approval without id", ErrInvalid)
	case a.Kind == "":
		return fmt.Errorf("%w: approval %s without kind", ErrInvalid, a.ID)
	case a.CreatedAt.IsZero():
		return fmt.Errorf("%w: approval %s without creation time", ErrInvalid, a.ID)
	}
	switch a.Status {
	case ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired:
		return nil
	}
	return fmt.Errorf("%w: approval %s: status %q", ErrInvalid, a.ID, a.Status)
}

// nanos is t in Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the inverse of nanos.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// PutApproval enqueues the insert of a, unless an approval of its id is
// stored already (a call held again after a restart keeps its record). It
// does not wait for the commit; a later DecideApproval is committed after
// it.
func (s *Store) PutApproval(a ApprovalRow) error {
	if err := a.validate(); err != nil {
		return err
	}
	return s.async("put approval", func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO approvals (id, seq, conversation, thread, agent, target, kind, payload,
			request_reason, rules, suggestion, severity, created_at, expires_at, status, decided_by, reason, decided_at, owner)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			a.ID, a.Seq, a.Conversation, a.Thread, a.Agent, a.Target, a.Kind, a.Payload, a.RequestReason,
			strings.Join(a.Rules, "\n"), a.Suggestion, a.Severity, nanos(a.CreatedAt), nanos(a.ExpiresAt), a.Status, a.DecidedBy, a.Reason,
			nanos(a.DecidedAt), a.Owner)
	})
}

// DecideApproval records the decision about the pending approval id and
// waits for the commit: status (approved, denied or expired), who decided
// and why, and when. It fails with ErrNotFound when there is no such
// approval and with ErrDecided when it was decided already.
func (s *Store) DecideApproval(ctx context.Context, id, status, by, reason string, at time.Time) error {
	switch status {
	case ApprovalApproved, ApprovalDenied, ApprovalExpired:
	default:
		return fmt.Errorf("%w: decision %q", ErrInvalid, status)
	}
	var outcome error
	_, err := s.do(ctx, "decide approval", func(w *writer) (int64, error) {
		n, err := w.exec(`UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?
			WHERE id = ? AND status = 'pending'`, status, by, reason, nanos(at), id)
		if err != nil || n > 0 {
			return n, err
		}
		found, err := w.queryInt64s(`SELECT count(*) FROM approvals WHERE id = ?`, id)
		if err != nil {
			return 0, err
		}
		if len(found) == 1 && found[0] > 0 {
			outcome = fmt.Errorf("%w: %s", ErrDecided, id)
		} else {
			outcome = fmt.Errorf("%w: approval %s", ErrNotFound, id)
		}
		return 0, nil
	})
	if err != nil {
		return err
	}
	return outcome
}

// ApprovalFilter selects approvals: empty fields match everything.
type ApprovalFilter struct {
	// Status selects one status.
	Status string
	// Thread selects the approvals of a thread or conversation (either
	// matches).
	Thread string
	// ID selects one approval.
	ID string
	// PrivateKinds, when set, keeps of the approvals of those kinds only
	// Owner's ("" owns none).
	PrivateKinds []string
	Owner        string
	// Limit caps the rows (0: all); the newest come first.
	Limit int
	// After, when set, keeps the rows that come after approval After in
	// that order (a page's cursor); none when no approval has that id.
	After string
}

// Approvals returns the approvals f selects, newest first.
func (s *Store) Approvals(ctx context.Context, f ApprovalFilter) ([]ApprovalRow, error) {
	q := `SELECT id, seq, conversation, thread, agent, target, kind, payload, request_reason, rules, suggestion,
		severity, created_at,
		expires_at, status, decided_by, reason, decided_at, owner FROM approvals WHERE 1 = 1`
	var args []any
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	if f.Thread != "" {
		q += ` AND (thread = ? OR conversation = ?)`
		args = append(args, f.Thread, f.Thread)
	}
	if f.ID != "" {
		q += ` AND id = ?`
		args = append(args, f.ID)
	}
	if len(f.PrivateKinds) > 0 {
		q += ` AND (kind NOT IN (?` + strings.Repeat(`, ?`, len(f.PrivateKinds)-1) + `) OR owner = ? AND owner <> '')`
		for _, k := range f.PrivateKinds {
			args = append(args, k)
		}
		args = append(args, f.Owner)
	}
	if f.After != "" {
		q += ` AND (created_at < (SELECT created_at FROM approvals WHERE id = ?)
			OR created_at = (SELECT created_at FROM approvals WHERE id = ?) AND id > ?)`
		args = append(args, f.After, f.After, f.After)
	}
	q += ` ORDER BY created_at DESC, id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	return load(ctx, s, "read approvals", q, args, func(rows *sql.Rows) (ApprovalRow, error) {
		var (
			a                                 ApprovalRow
			rules                             string
			created, expires, decided         int64
			conversation, thread, target, pay sql.NullString
		)
		err := rows.Scan(&a.ID, &a.Seq, &conversation, &thread, &a.Agent, &target, &a.Kind, &pay, &a.RequestReason,
			&rules, &a.Suggestion, &a.Severity, &created, &expires, &a.Status, &a.DecidedBy, &a.Reason, &decided, &a.Owner)
		a.Conversation, a.Thread, a.Target, a.Payload = conversation.String, thread.String, target.String, pay.String
		if rules != "" {
			a.Rules = strings.Split(rules, "\n")
		}
		a.CreatedAt, a.ExpiresAt, a.DecidedAt = fromNanos(created), fromNanos(expires), fromNanos(decided)
		return a, err
	})
}
