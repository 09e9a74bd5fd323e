package llm

import (
	"fmt"
	"strings"
)

// DefaultContextWindow is the context window (in tokens) assumed for a model
// the window table does not know, when neither the agent nor its backend
// sets context_window.
const DefaultContextWindow = 32768

// contextWindows are the context windows of well-known model families, by
// name prefix (longest first where prefixes overlap). A model not listed
// gets DefaultContextWindow; set context_window for others.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"gpt-4-turbo", 128000},
	{"gpt-5", 400000},
	{"o1", 200000},
	{"o3", 200000},
	{"o4", 200000},
	{"gpt-3.5", 16385},
	{"claude", 200000},
	{"grok-4", 256000},
	{"grok-3", 131072},
	{"grok", 131072},
	{"llama3.1", 131072},
	{"llama3.2", 131072},
	{"llama3.3", 131072},
	{"qwen2.5", 32768},
	{"qwen3", 40960},
	{"mistral", 32768},
	{"gemma3", 131072},
}

// ContextWindowOf returns the context window of model from the table of
// well-known families, DefaultContextWindow for any other.
func ContextWindowOf(model string) int {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 { // "openai/gpt-4o" on a gateway
		m = m[i+1:]
	}
	for _, w := range contextWindows {
		if strings.HasPrefix(m, w.prefix) {
			return w.tokens
		}
	}
	return DefaultContextWindow
}

// estimateText is the token estimate of text: about four characters a
// token, as the token buckets reckon.
func estimateText(s string) int { return (len(s) + 3) / 4 }

// messageTokens estimates one message, with a little for its framing.
func messageTokens(m Message) int {
	n := 4 + estimateText(m.Content)
	for _, c := range m.ToolCalls {
		n += 4 + estimateText(c.Name) + estimateText(string(c.Arguments))
	}
	return n
}

// fitWindow trims a request's history, oldest first, until the request
// fits window tokens with room for the completion. sys are the leading
// system messages (always kept), hist the conversation; the last unit of
// hist (the message the agent is answering, or the latest calls and their
// results) is always kept. An assistant message with tool calls goes or
// stays together with its results. When anything is left out, a note
// saying how many messages were omitted takes its place, so the model
// never loses history silently. It returns the messages and how many were
// omitted.
func fitWindow(sys, hist []Message, tools []ToolSpec, output *OutputSchema, window, maxTokens int) ([]Message, int) {
	budget := window - completionReserve(window, maxTokens)
	used := overheadTokens(sys, tools, output)
	units := historyUnits(hist)
	sizes := make([]int, len(units))
	total := 0
	for i, u := range units {
		for _, m := range hist[u.from:u.to] {
			sizes[i] += messageTokens(m)
		}
		total += sizes[i]
	}
	drop := 0 // units dropped from the front
	if used+total > budget {
		const noteTokens = 20
		for drop < len(units)-1 && used+total+noteTokens > budget {
			total -= sizes[drop]
			drop++
		}
	}
	out := make([]Message, 0, len(sys)+len(hist)+1)
	out = append(out, sys...)
	if drop == 0 {
		return append(out, hist...), 0
	}
	omitted := units[drop].from
	// A user message, not a system one: the conversation then still opens
	// with the user's turn, which anthropic requires.
	out = append(out, Message{Role: User, Content: omittedNote(omitted)})
	return append(out, hist[omitted:]...), omitted
}

// omittedNote is the note that replaces the history left out.
func omittedNote(n int) string {
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("[%d earlier message%s of this conversation omitted to fit the context window]", n, s)
}

// overheadTokens estimates what a request costs besides its history: the
// system messages, the tools offered and the output schema.
func overheadTokens(sys []Message, tools []ToolSpec, output *OutputSchema) int {
	used := 0
	for _, m := range sys {
		used += messageTokens(m)
	}
	for _, t := range tools {
		used += 8 + estimateText(t.Name) + estimateText(t.Description) + estimateText(string(t.Parameters))
	}
	if output != nil {
		used += estimateText(string(output.Schema))
	}
	return used
}

// completionReserve is how much of the window is kept for the answer:
// max_tokens when set, else a quarter of the window up to 4096.
func completionReserve(window, maxTokens int) int {
	if maxTokens > 0 {
		return min(maxTokens, window/2)
	}
	return min(window/4, 4096)
}

// unit is a span of history messages that is kept or dropped whole.
type unit struct{ from, to int }

// historyUnits splits history into units: an assistant message with tool
// calls and the tool messages answering it form one; every other message is
// its own.
func historyUnits(hist []Message) []unit {
	var us []unit
	for i := 0; i < len(hist); {
		j := i + 1
		if hist[i].Role == Assistant && len(hist[i].ToolCalls) > 0 {
			for j < len(hist) && hist[j].Role == Tool {
				j++
			}
		}
		us = append(us, unit{i, j})
		i = j
	}
	return us
}
