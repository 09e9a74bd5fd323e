package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// ErrForbidden: the user's role does not allow the command (a remote
// client's REST request answered 403).
var ErrForbidden = errors.New("forbidden for this role")

// Governor is an optional Backend capability: the approvals (/approvals,
// /approve, /deny) and the emergency halt (/halt, /resume). Decide's
// errors wrap ErrApprovalNotFound or ErrApprovalDecided.
type Governor interface {
	// Approvals lists the approvals of status ("" for every one), newest
	// first.
	Approvals(ctx context.Context, status string) ([]Approval, error)
	// Decide approves or denies the approval id, with a reason.
	Decide(ctx context.Context, id string, approve bool, reason string) (Approval, error)
	// Halt stops the agents (all: every listener) and reports the scope.
	Halt(ctx context.Context, all bool) (scope string, err error)
	// Resume lifts a halt; false when none was in force.
	Resume(ctx context.Context) (bool, error)
	// WatchGovernance calls fn with a line for every governance event the
	// user may see (a call begins waiting, is decided; a halt; a guardian
	// alert) until cancel is called. fn must not block.
	WatchGovernance(fn func(line string)) (cancel func())
}

// ListenerHalter is an optional Backend capability beside Governor: the
// emergency stop of one listener (/halt NAME, /resume NAME). HaltListener's
// error wraps pump.ErrUnknownListener for a name no listener has.
type ListenerHalter interface {
	// HaltListener stops the listener called name at once.
	HaltListener(ctx context.Context, name string) error
	// ResumeListener lifts its halt; false when it was not halted alone.
	ResumeListener(ctx context.Context, name string) (bool, error)
}

// localUser is who decides in the in-process console (the operator at the
// terminal).
const localUser = "console"

// Approvals implements Governor.
func (l *Local) Approvals(ctx context.Context, status string) ([]Approval, error) {
	return l.org.Governance().Approvals(ctx, ApprovalFilter{Status: status})
}

// Decide implements Governor.
func (l *Local) Decide(ctx context.Context, id string, approve bool, reason string) (Approval, error) {
	return l.org.Governance().Decide(ctx, id, approve, localUser, reason)
}

// Halt implements Governor.
func (l *Local) Halt(_ context.Context, all bool) (string, error) {
	scope := pump.HaltAgents
	if all {
		scope = pump.HaltAll
	}
	rep, err := l.org.Governance().Halt(localUser, scope)
	return rep.Scope.String(), err
}

// Resume implements Governor.
func (l *Local) Resume(context.Context) (bool, error) {
	return l.org.Governance().Resume(localUser), nil
}

// HaltListener implements ListenerHalter.
func (l *Local) HaltListener(_ context.Context, name string) error {
	_, err := l.org.Governance().HaltListener(localUser, name)
	return err
}

// ResumeListener implements ListenerHalter.
func (l *Local) ResumeListener(_ context.Context, name string) (bool, error) {
	return l.org.Governance().ResumeListener(localUser, name), nil
}

// WatchGovernance implements Governor: the local console is the
// organism's operator and hears of every governance event.
func (l *Local) WatchGovernance(fn func(line string)) (cancel func()) {
	return l.org.Governance().Subscribe(func(e GovernanceEvent) {
		if line := e.Line(); line != "" {
			fn(line)
		}
	})
}

// Line is the line a console prints for the event ("" for a kind it does
// not show): a call begins waiting or is decided, a halt or resume, a
// guardian alert.
func (e GovernanceEvent) Line() string {
	switch e.Kind {
	case EventApproval, EventApprovalDecided:
		if a := e.Approval; a != nil {
			return approvalLine(e.Kind, a.ID, a.Agent, a.Target, a.RequestReason, a.Status, a.DecidedBy, a.Reason, a.Call())
		}
	case EventHalted:
		return haltLine(true, e.Scope, e.Listener, e.By)
	case EventResumed:
		return haltLine(false, e.Scope, e.Listener, e.By)
	case EventGuardianAlert:
		if al := e.Alert; al != nil {
			return alertLine(al.Sender, al.Count, al.Window.String(), al.Rules)
		}
	}
	return ""
}

// approvalLine is the line a console prints when a call begins waiting
// (with the call it holds, clipped) or is decided.
func approvalLine(kind, id, agent, target, why, status, by, reason, call string) string {
	if kind != EventApproval {
		s := fmt.Sprintf("[approval] %s %s: %s → %s", id, status, agent, target)
		if by != "" {
			s += " by " + by
		}
		if reason != "" {
			s += ": " + reason
		}
		return s
	}
	s := fmt.Sprintf("[approval] %s: %s → %s waits for a human", id, agent, target)
	if why != "" {
		s += " (" + why + ")"
	}
	s += fmt.Sprintf(": /approve %s or /deny %s <reason>", id, id)
	if call != "" {
		s += "; it holds " + clip(call, maxCallShown)
	}
	return s
}

// maxCallShown is how much of a held call an approval line shows.
const maxCallShown = 300

// clip cuts s to n bytes, on a rune boundary, with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// haltLine is the line of a halt or resume.
func haltLine(halted bool, scope, listener, by string) string {
	switch {
	case listener != "" && halted:
		return fmt.Sprintf("[halt] listener %s is halted by %s: /resume %[1]s to go on", listener, by)
	case listener != "":
		return fmt.Sprintf("[halt] listener %s resumed by %s", listener, by)
	case halted:
		return fmt.Sprintf("[halt] the organism is halted (%s) by %s: /resume to go on", scope, by)
	}
	return "[halt] resumed by " + by
}

// alertLine is the line of a guardian alert.
func alertLine(sender string, count int, window string, rules []string) string {
	return fmt.Sprintf("[guardian] %s was refused %d times within %s (rules %s)", sender, count, window,
		strings.Join(rules, ", "))
}
