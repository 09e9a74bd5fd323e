package llm

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// Completer gives Go agents (the hello-world greeter) one completion at a
// time: the constitution, the agent's prompt, then the user message. It
// implements hello.Completer.
type Completer struct {
	// LLM sends the requests (usually the Router).
	LLM Chatter
	// Prompts maps an agent name to its system prompt.
	Prompts map[string]string
	// Models maps an agent name to its model ("" or absent: the backend's).
	Models map[string]string
	// Constitutions maps an agent name to its constitution text ("" or
	// absent: Constitution()).
	Constitutions map[string]string
	// Budget is checked before each call, against Usage (nil: no check).
	Budget Budget
	Usage  UsageSource

	warned atomic.Bool
}

// Complete asks the model on behalf of agent on thread.
func (c *Completer) Complete(ctx context.Context, agent, thread, userMessage string) (string, error) {
	if reason := c.Budget.check(c.Usage, agent, thread, &c.warned, slog.Default()); reason != "" {
		return "", fmt.Errorf("llm: %s: %w: %s", agent, ErrBudget, reason)
	}
	text := c.Constitutions[agent]
	if text == "" {
		text = Constitution()
	}
	msgs := []Message{{Role: System, Content: text}}
	if p := c.Prompts[agent]; p != "" {
		msgs = append(msgs, Message{Role: System, Content: p})
	}
	msgs = append(msgs, Message{Role: User, Content: userMessage})
	rep, err := c.LLM.Chat(ctx, Request{Model: c.Models[agent], Messages: msgs, Agent: agent, Thread: thread})
	if err != nil {
		return "", fmt.Errorf("llm: complete for %s: %w", agent, err)
	}
	return rep.Content, nil
}
