package llm

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// Budget is the token budgets an agent's calls are checked against.
type Budget struct {
	// ThreadTokens and AgentTokens cap the tokens spent on one thread and by
	// one agent (0: unlimited).
	ThreadTokens, AgentTokens int
	// OnExceed is stop (halt the thread) or warn (log and carry on).
	OnExceed config.ExceedPolicy
}

// check returns why the budget stops a call by agent on thread, or "". Under
// on_exceed: warn an exhausted budget is logged (once per warned flag) and
// the call goes ahead.
func (b Budget) check(u UsageSource, agent, thread string, warned *atomic.Bool, log *slog.Logger) string {
	if u == nil {
		return ""
	}
	var reason string
	if lim := b.ThreadTokens; lim > 0 && thread != "" {
		if used := u.ThreadUsage(thread).Total(); used >= lim {
			reason = fmt.Sprintf("thread token budget exhausted (%d of %d)", used, lim)
		}
	}
	if lim := b.AgentTokens; reason == "" && lim > 0 {
		if used := u.AgentUsage(agent).Total(); used >= lim {
			reason = fmt.Sprintf("agent token budget exhausted (%d of %d)", used, lim)
		}
	}
	if reason == "" || b.OnExceed == config.ExceedStop || b.OnExceed == "" {
		return reason
	}
	if warned.CompareAndSwap(false, true) {
		log.Warn("token budget exceeded; carrying on (on_exceed: warn)", "agent", agent, "reason", reason)
	}
	return ""
}
