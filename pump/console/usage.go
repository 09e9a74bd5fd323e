package console

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// UsageCalls is how many of the newest LLM calls /usage lists.
const UsageCalls = 10

// TokenUsage is the LLM usage of one agent or backend.
type TokenUsage struct {
	Name                                     string
	PromptTokens, CompletionTokens, Requests int
}

// Call is one LLM call (one attempt at one backend), as /usage lists it.
type Call struct {
	Time                                      time.Time
	Conversation, Agent, Backend, Model       string
	PromptTokens, CompletionTokens, ToolCalls int
	// FirstToken is the time to the first streamed text (0: none),
	// Duration the whole call.
	FirstToken, Duration time.Duration
	FinishReason, Error  string
	// EnvelopeSeq is the journal seq of the envelope the call produced (0: not known).
	EnvelopeSeq int64
}

// Usage is the organism's LLM usage per agent and per backend, and its
// newest calls (oldest first).
type Usage struct {
	Agents, Backends []TokenUsage
	Calls            []Call
}

// UsageReporter is an optional Backend capability: the LLM usage for /usage.
type UsageReporter interface {
	Usage(ctx context.Context) (Usage, bool, error)
}

// Usage implements UsageReporter; ok is false when the organism has no
// usable LLM backend.
func (l *Local) Usage(context.Context) (Usage, bool, error) {
	r := l.org.LLM
	if r == nil {
		return Usage{}, false, nil
	}
	rep := r.Usage()
	var u Usage
	for name, v := range rep.Agents {
		u.Agents = append(u.Agents, TokenUsage{name, v.PromptTokens, v.CompletionTokens, v.Requests})
	}
	for name, v := range rep.Backends {
		u.Backends = append(u.Backends, TokenUsage{name, v.PromptTokens, v.CompletionTokens, v.Requests})
	}
	for _, list := range [][]TokenUsage{u.Agents, u.Backends} {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
	calls, err := l.org.Calls("", UsageCalls)
	if err != nil {
		return Usage{}, false, err
	}
	for _, c := range calls {
		u.Calls = append(u.Calls, Call{Time: c.Time, Conversation: c.Conversation, Agent: c.Agent, Backend: c.Backend,
			Model: c.Model, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, ToolCalls: c.ToolCalls,
			FirstToken: c.FirstToken, Duration: c.Duration, FinishReason: c.FinishReason, Error: c.Error,
			EnvelopeSeq: c.EnvelopeSeq})
	}
	return u, true, nil
}

func (c *Console) cmdUsage(ctx context.Context, _ string) {
	ur, ok := c.b.(UsageReporter)
	if !ok {
		c.say("Token usage is not available over this connection.")
		return
	}
	u, ok, err := ur.Usage(ctx)
	switch {
	case err != nil:
		c.say("Error: " + err.Error())
		return
	case !ok:
		c.say("No LLM backend is configured.")
		return
	}
	c.say(usageLines(u)...)
}

// usageLines renders /usage: the totals per agent and backend, then the
// newest calls, one a line: when (UTC), conversation, backend/model,
// tokens, time to first token, total time, why the model stopped (or
// what failed) and the journal seq of the envelope it produced.
func usageLines(u Usage) []string {
	lines := []string{"Token usage (prompt + completion = total, requests):"}
	for _, part := range []struct {
		title string
		list  []TokenUsage
	}{{"Agents", u.Agents}, {"Backends", u.Backends}} {
		lines = append(lines, part.title+":")
		if len(part.list) == 0 {
			lines = append(lines, "  none yet")
		}
		for _, t := range part.list {
			lines = append(lines, fmt.Sprintf("  %-20s %d + %d = %d tokens, %d requests", t.Name, t.PromptTokens,
				t.CompletionTokens, t.PromptTokens+t.CompletionTokens, t.Requests))
		}
	}
	lines = append(lines, fmt.Sprintf("Last calls (newest last, at most %d):", UsageCalls))
	if len(u.Calls) == 0 {
		lines = append(lines, "  none yet")
	}
	for _, c := range u.Calls {
		line := fmt.Sprintf("  %s  %-16s %-24s", c.Time.UTC().Format("15:04:05Z"), label(c.Agent, c.Conversation),
			c.Backend+"/"+c.Model)
		if c.Error != "" {
			line += fmt.Sprintf(" failed after %s: %s", millis(c.Duration), c.Error)
		} else {
			first := "-"
			if c.FirstToken > 0 {
				first = millis(c.FirstToken)
			}
			line += fmt.Sprintf(" %d + %d tokens  first %s  total %s  %s", c.PromptTokens, c.CompletionTokens, first,
				millis(c.Duration), c.FinishReason)
			if c.ToolCalls > 0 {
				line += fmt.Sprintf(", %d tool calls", c.ToolCalls)
			}
		}
		if c.EnvelopeSeq > 0 {
			line += fmt.Sprintf("  → #%d", c.EnvelopeSeq)
		}
		lines = append(lines, line)
	}
	return lines
}

// millis renders a duration in milliseconds below 10 s, else in seconds.
func millis(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
