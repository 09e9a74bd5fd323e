package organism

import (
	"context"
	"sort"
)

// UsageCalls is how many of the newest LLM calls /usage lists.
const UsageCalls = 10

// TokenUsage is the LLM usage of one agent or backend.
type TokenUsage struct {
	Name                                     string
	PromptTokens, CompletionTokens, Requests int
}

// Usage is the organism's LLM usage per agent and per backend, and its
// newest calls (oldest first), as /usage lists them.
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
	u.Calls = append(u.Calls, calls...)
	return u, true, nil
}
