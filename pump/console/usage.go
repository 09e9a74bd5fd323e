package console

import (
	"context"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

func (c *Console) cmdUsage(ctx context.Context, _ string) {
	ur, ok := c.b.(organism.UsageReporter)
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
// tokens (≈ when estimated), time to first token, total time, why the model stopped (or
// what failed) and the journal seq of the envelope it produced.
func usageLines(u organism.Usage) []string {
	lines := []string{"Token usage (prompt + completion = total, requests):"}
	for _, part := range []struct {
		title string
		list  []organism.TokenUsage
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
	lines = append(lines, fmt.Sprintf("Last calls (newest last, at most %d):", organism.UsageCalls))
	if len(u.Calls) == 0 {
		lines = append(lines, "  none yet")
	}
	for _, c := range u.Calls {
		line := fmt.Sprintf("  %s  %-16s %-24s", c.Time.UTC().Format("15:04:05Z"), label(c.Agent, c.Conversation),
			c.Backend+"/"+c.Model)
		switch c.Outcome() {
		case organism.OutcomeAborted:
			line += fmt.Sprintf(" aborted after %s, %s%d + %d tokens spent: %s", millis(c.Duration), estimated(c),
				c.PromptTokens, c.CompletionTokens, c.Error)
		case organism.OutcomeFailed:
			line += fmt.Sprintf(" failed after %s: %s", millis(c.Duration), c.Error)
		default:
			first := "-"
			if c.FirstToken > 0 {
				first = millis(c.FirstToken)
			}
			line += fmt.Sprintf(" %s%d + %d tokens  first %s  total %s  %s", estimated(c), c.PromptTokens,
				c.CompletionTokens, first, millis(c.Duration), c.FinishReason)
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

// estimated is the mark of a call's tokens that are an estimate (the
// backend reported no usage, or the call was stopped mid-stream): "≈", else
// "".
func estimated(c organism.Call) string {
	if c.UsageEstimated {
		return "≈"
	}
	return ""
}

// millis renders a duration in milliseconds below 10 s, else in seconds.
func millis(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
