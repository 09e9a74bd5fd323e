package console

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// fixedUsage is a backend whose /usage numbers are fixed.
type fixedUsage struct {
	Backend
	u Usage
}

func (f fixedUsage) Usage(context.Context) (Usage, bool, error) { return f.u, true, nil }

// TestUsageGolden pins /usage: tokens per agent and backend, then the newest
// calls with their tokens, latency, outcome and envelope.
func TestUsageGolden(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC)
	conv := "3f2a1b2c-0000-4000-8000-000000000000"
	b := fixedUsage{Backend: helloWorld(t), u: Usage{
		Agents:   []TokenUsage{{"critic", 40, 12, 2}, {"poet", 22, 14, 2}},
		Backends: []TokenUsage{{"local", 62, 26, 4}},
		Calls: []Call{
			{Time: at, Conversation: conv, Agent: "poet", Backend: "local", Model: "qwen2.5", PromptTokens: 11,
				CompletionTokens: 7, FirstToken: 120 * time.Millisecond, Duration: 830 * time.Millisecond,
				FinishReason: "stop", EnvelopeSeq: 42},
			{Time: at.Add(time.Second), Conversation: conv, Agent: "critic", Backend: "local", Model: "qwen2.5",
				Duration: 12500 * time.Millisecond, Error: "HTTP 503 Service Unavailable"},
			{Time: at.Add(2 * time.Second), Conversation: conv, Agent: "critic", Backend: "local", Model: "qwen2.5",
				PromptTokens: 40, CompletionTokens: 12, Duration: 2 * time.Second, FinishReason: "tool_calls",
				ToolCalls: 2, EnvelopeSeq: 45},
		},
	}}
	golden(t, filepath.Join("commands", "usage"), session(t, b, Config{}, "/usage\n"))
	golden(t, filepath.Join("commands", "usage-none"), session(t, fixedUsage{Backend: helloWorld(t)}, Config{}, "/usage\n"))
}
