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
	units := historyUnits(hist)
	next := len(units)
	return fitUnits(sys, func() ([]Message, bool) {
		if next == 0 {
			return nil, false
		}
		next--
		return hist[units[next].from:units[next].to], true
	}, len(hist), tools, output, window, maxTokens)
}

// fitUnits is fitWindow of a history given as its units, newest first
// (next returns each in turn, false when there are no more), of total
// messages in all: it reads only the units it keeps and, to tell whether
// all of them fit, a few more — so a long conversation's request costs
// what the window holds, not what the conversation does.
func fitUnits(sys []Message, next func() ([]Message, bool), total int, tools []ToolSpec, output *OutputSchema,
	window, maxTokens int) ([]Message, int) {
	budget := window - completionReserve(window, maxTokens)
	used := overheadTokens(sys, tools, output)
	// While units are left out, a note stands for them.
	const noteTokens = 20
	var kept [][]Message // newest first
	sum, n := 0, 0
	keep := func(u []Message, size int) {
		kept = append(kept, u)
		sum += size
		n += len(u)
	}
	u, ok := next()
	for ok {
		size := unitTokens(u)
		if len(kept) > 0 && used+sum+size+noteTokens > budget {
			// Not with the note: left out with the older ones — unless
			// these are all that is left and fit without it. Each unit
			// costs some tokens, so few are read to tell.
			rest := [][]Message{u}
			all := used + sum + size
			for all <= budget {
				older, more := next()
				if !more {
					for _, r := range rest {
						keep(r, 0)
					}
					sum = all
					break
				}
				rest = append(rest, older)
				all += unitTokens(older)
			}
			break
		}
		keep(u, size)
		u, ok = next()
	}
	omitted := total - n
	out := make([]Message, 0, len(sys)+n+1)
	out = append(out, sys...)
	if omitted > 0 {
		// A user message, not a system one: the conversation then still
		// opens with the user's turn, which anthropic requires.
		out = append(out, Message{Role: User, Content: omittedNote(omitted)})
	}
	for i := len(kept) - 1; i >= 0; i-- {
		out = append(out, kept[i]...)
	}
	return out, omitted
}

// unitTokens estimates the messages of a unit.
func unitTokens(u []Message) int {
	n := 0
	for _, m := range u {
		n += messageTokens(m)
	}
	return n
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
