package llm

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// extractiveBy names the built-in summariser (registry.Segment.SummaryBy).
const extractiveBy = "extractive"

// extractive summarises text without a model, in at most max bytes: its
// first sentence, then its key lines — lines that state something (a
// colon, a number, an equals sign) — in order, each cut short when it does
// not fit. Markup is read as its text. It is a first approximation of a
// constructed memory: the librarian's model writes better ones.
func extractive(text string, max int) string {
	text = strings.TrimSpace(stripTags(text))
	if text == "" || max <= 0 {
		return ""
	}
	lines := strings.Split(text, "\n")
	var parts []string
	used := 0
	add := func(s string) bool {
		s = strings.Join(strings.Fields(s), " ")
		if s == "" {
			return true
		}
		for _, p := range parts {
			if strings.Contains(p, s) {
				return true
			}
		}
		room := max - used - 3 // " … "
		if room <= 8 {
			return false
		}
		if len(s) > room {
			s = cutRunes(s, room-len("…")) + "…"
		}
		parts = append(parts, s)
		used += len(s) + 3
		return used < max-8
	}
	first := firstSentence(strings.Join(strings.Fields(text), " "))
	if !add(first) {
		return strings.Join(parts, " … ")
	}
	for _, l := range lines {
		if !keyLine(l) {
			continue
		}
		l = strings.Join(strings.Fields(l), " ")
		if rest, ok := strings.CutPrefix(l, first); ok { // the line the first sentence came from
			l = rest
		}
		if !add(l) {
			break
		}
	}
	return strings.Join(parts, " … ")
}

// firstSentence is text up to its first sentence end (". ", "! ", "? ",
// or the end).
func firstSentence(text string) string {
	for i := 0; i+1 < len(text); i++ {
		switch text[i] {
		case '.', '!', '?':
			if text[i+1] == ' ' {
				return text[:i+1]
			}
		}
	}
	return text
}

// keyLine reports whether a line states something worth keeping.
func keyLine(l string) bool {
	l = strings.TrimSpace(l)
	if len(l) < 4 {
		return false
	}
	return strings.ContainsAny(l, ":=") || strings.IndexFunc(l, unicode.IsDigit) >= 0
}

// stripTags reads markup as its text: every <…> becomes a space.
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
			b.WriteByte(' ')
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cutRunes cuts s to at most n bytes on a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// summaryPrompt asks the librarian's model for a fold summary.
const summaryPrompt = "You are a librarian keeping an agent's memory. Summarise the conversation segment the user " +
	"gives you as a constructed memory in at most %d words: keep the facts, names, numbers, decisions and answers; " +
	"drop the procedure. Answer with the summary only."

// maxSummaryInput bounds the text a model summary is written from.
const maxSummaryInput = 24 << 10

// summarise asks the librarian's model for a fold summary of text, at most
// max bytes (cut on a rune boundary when the model writes more).
func (l *Librarian) summarise(ctx context.Context, thread, text string, max int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.summaryTimeout())
	defer cancel()
	in := text
	if len(in) > maxSummaryInput {
		in = cutRunes(in, maxSummaryInput) + "\n[…]"
	}
	rep, err := l.LLM.Chat(ctx, Request{Model: l.Model, MaxTokens: max/3 + 16, Agent: librarianAgent, Thread: thread,
		Messages: []Message{{Role: System, Content: fmt.Sprintf(summaryPrompt, l.summaryWords())}, {Role: User, Content: in}}})
	if err != nil {
		return "", err
	}
	s := strings.Join(strings.Fields(rep.Content), " ")
	if s == "" {
		return "", fmt.Errorf("the model wrote an empty summary")
	}
	if len(s) > max {
		s = cutRunes(s, max-len("…")) + "…"
	}
	return s, nil
}
