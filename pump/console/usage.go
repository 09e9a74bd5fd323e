package console

import (
	"context"
	"fmt"
	"sort"
)

// TokenUsage is the LLM usage of one agent or backend.
type TokenUsage struct {
	Name                                     string
	PromptTokens, CompletionTokens, Requests int
}

// Usage is the organism's LLM usage per agent and per backend.
type Usage struct {
	Agents, Backends []TokenUsage
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
	c.say(lines...)
}
