package console

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// fixedUsage is a backend whose /usage numbers are fixed.
type fixedUsage struct {
	organism.Backend
	u organism.Usage
}

func (f fixedUsage) Usage(context.Context) (organism.Usage, bool, error) { return f.u, true, nil }

// TestUsageGolden pins /usage: tokens per agent and backend, then the newest
// calls with their tokens (≈ when estimated), latency, outcome and envelope.
func TestUsageGolden(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC)
	conv := "3f2a1b2c-0000-4000-8000-000000000000"
	b := fixedUsage{Backend: helloWorld(t), u: organism.Usage{
		Agents:   []organism.TokenUsage{{Name: "critic", PromptTokens: 40, CompletionTokens: 12, Requests: 2}, {Name: "poet", PromptTokens: 22, CompletionTokens: 14, Requests: 2}},
		Backends: []organism.TokenUsage{{Name: "local", PromptTokens: 62, CompletionTokens: 26, Requests: 4}},
		Calls: []organism.Call{
			{Time: at, Conversation: conv, Agent: "poet", Backend: "local", Model: "qwen2.5", PromptTokens: 11,
				CompletionTokens: 7, FirstToken: 120 * time.Millisecond, Duration: 830 * time.Millisecond,
				FinishReason: "stop", EnvelopeSeq: 42},
			{Time: at.Add(time.Second), Conversation: conv, Agent: "critic", Backend: "local", Model: "qwen2.5",
				Duration: 12500 * time.Millisecond, Error: "HTTP 503 Service Unavailable"},
			{Time: at.Add(2 * time.Second), Conversation: conv, Agent: "critic", Backend: "local", Model: "qwen2.5",
				PromptTokens: 40, CompletionTokens: 12, Duration: 2 * time.Second, FinishReason: "tool_calls",
				ToolCalls: 2, EnvelopeSeq: 45, UsageEstimated: true},
			{Time: at.Add(3 * time.Second), Conversation: conv, Agent: "poet", Backend: "local", Model: "qwen2.5",
				PromptTokens: 30, CompletionTokens: 4, Duration: 1500 * time.Millisecond, FinishReason: organism.FinishAborted,
				Error: "context canceled (after: read reply: pump: halted)", UsageEstimated: true},
		},
	}}
	golden(t, filepath.Join("commands", "usage"), session(t, b, Config{}, "/usage\n"))
	golden(t, filepath.Join("commands", "usage-none"), session(t, fixedUsage{Backend: helloWorld(t)}, Config{}, "/usage\n"))
}
