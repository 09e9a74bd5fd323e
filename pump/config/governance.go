package config

import (
	"strings"
	"time"
)

// DefaultApprovalTimeout is how long a call waits for a human when its
// listener sets no approval_timeout.
const DefaultApprovalTimeout = time.Hour

// Governance is the governance: section: how the guardian and the
// approvals behave (the rules themselves are in the constitution
// documents; which calls need a human is each listener's approval list).
type Governance struct {
	// AlertAfter is how many refused messages of one sender within
	// AlertWindow make the organism alert its operators (a warning in the
	// log, an event to admin clients and OOB subscribers; default 3; 0:
	// never).
	AlertAfter int `yaml:"alert_after"`
	// AlertWindow is the window AlertAfter counts in (default 10m).
	AlertWindow Duration `yaml:"alert_window"`
}

// ApprovalWait is how long a call of l waits for a human: its
// approval_timeout, else DefaultApprovalTimeout.
func (l Listener) ApprovalWait() time.Duration {
	if l.ApprovalTimeout > 0 {
		return l.ApprovalTimeout.D()
	}
	return DefaultApprovalTimeout
}

// NeedsApproval reports whether l's calls to target wait for a human (its
// approval list names target, case-insensitively).
func (l Listener) NeedsApproval(target string) bool {
	return containsFold(l.Approval, target)
}

// checkGovernance reports bad governance limits and constitution paths.
func (o *Organism) checkGovernance(r *reporter) {
	r.nonNegative("governance.alert_after", o.Governance.AlertAfter)
	if o.Governance.AlertAfter > 0 {
		r.positiveDuration("governance.alert_window", o.Governance.AlertWindow)
	}
	seen := map[string]int{}
	for i, p := range o.Constitution {
		path := childIndex("constitution", i)
		first, dup := seen[p]
		switch {
		case strings.TrimSpace(p) == "":
			r.add(path, "empty path")
		case dup:
			r.add(path, "the document of constitution[%d] is listed again", first)
		default:
			seen[p] = i
		}
	}
}

// checkApproval reports a bad approval list or timeout of listener l.
func checkApproval(r *reporter, path string, l Listener) {
	if l.ApprovalTimeout < 0 {
		r.add(path+".approval_timeout", "must not be negative, got %s (0 or unset: %s)", l.ApprovalTimeout,
			Duration(DefaultApprovalTimeout))
	}
	seen := map[string]bool{}
	for j, name := range l.Approval {
		at := childIndex(path+".approval", j)
		key := strings.ToLower(strings.TrimSpace(name))
		switch {
		case key == "":
			r.add(at, "empty name")
		case seen[key]:
			r.add(at, "%q is listed twice", name)
		case l.Agent && !containsFold(l.Peers, name) && !containsFold(l.Tools, name):
			r.add(at, "%q is neither among the agent's peers nor its tools: the agent cannot call it", name)
		}
		seen[key] = true
	}
}
