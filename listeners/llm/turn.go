package llm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// replyType is the PayloadType of the context-buffer slots that record an
// agent's own replies (the model's text, before the pump splits it).
const replyType = "llm.reply"

// messages builds the request: constitution, prompt, usage instructions,
// todo nudge, the history before the incoming message, then the incoming one.
func (a *Agent) messages(md xmlpipe.Metadata, slots []registry.Slot, incoming int) []Message {
	msgs := make([]Message, 0, len(slots)+4)
	msgs = append(msgs, Message{Role: System, Content: a.constitution()})
	if a.Prompt != "" {
		msgs = append(msgs, Message{Role: System, Content: a.Prompt})
	}
	if md.UsageInstructions != "" {
		msgs = append(msgs, Message{Role: System, Content: md.UsageInstructions})
	}
	for i, s := range slots {
		if i == incoming {
			continue
		}
		if m, ok := a.slotMessage(s); ok {
			msgs = append(msgs, m)
		}
	}
	if incoming >= 0 {
		m, _ := a.slotMessage(slots[incoming])
		if md.TodoNudge != "" {
			m.Content += "\n\n" + md.TodoNudge
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// slotMessage renders one history slot: the agent's own replies as assistant
// messages, everything addressed to it as user messages naming the sender.
func (a *Agent) slotMessage(s registry.Slot) (Message, bool) {
	switch {
	case s.From == a.Name && s.PayloadType == replyType:
		return Message{Role: Assistant, Content: clipText(s.Raw)}, true
	case s.To == a.Name:
		return Message{Role: User, Content: "[From " + s.From + "]\n" + clipText(s.Raw)}, true
	}
	return Message{}, false
}

// clipText returns b as text, cut at MaxHistoryText bytes (on a rune
// boundary) with a note saying how much was left out.
func clipText(b []byte) string {
	if len(b) <= MaxHistoryText {
		return string(b)
	}
	n := MaxHistoryText
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[… %d more bytes cut]", b[:n], len(b)-n)
}

// digestSpace drops the whitespace beside markup, which changes nothing.
var digestSpace = strings.NewReplacer("> ", ">", " <", "<")

// digest is the progress guard's fingerprint of a reply: case folded,
// whitespace runs collapsed and dropped beside markup.
func digest(text string) [32]byte {
	return sha256.Sum256([]byte(digestSpace.Replace(strings.ToLower(strings.Join(strings.Fields(text), " ")))))
}

// repeats counts how many of the agent's latest replies in a row, the new one
// included, have the same digest as reply.
func repeats(slots []registry.Slot, agent, reply string) int {
	d := digest(reply)
	n := 1
	for i := len(slots) - 1; i >= 0; i-- {
		s := slots[i]
		if s.From != agent || s.PayloadType != replyType {
			continue
		}
		if digest(string(s.Raw)) != d {
			break
		}
		n++
	}
	return n
}

// hasElement reports whether text holds something that looks like an XML
// element: '<' followed by a name start character. Text without one is the
// agent's answer; text with one goes to the pump, which splits, repairs and
// validates it (and answers what it cannot use with <huh>).
func hasElement(text string) bool {
	i := elementStart(text)
	return i >= 0 && i+1 < len(text)
}

// elementStart returns the index of the first '<' that starts an element
// name in text, or -1. A '<' at the very end counts (its name may follow in
// the next streamed delta).
func elementStart(text string) int {
	b := []byte(text)
	off := 0
	for {
		i := bytes.IndexByte(b[off:], '<')
		if i < 0 {
			return -1
		}
		i += off
		if i+1 >= len(b) {
			return i
		}
		c := b[i+1]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
			return i
		}
		off = i + 1
	}
}
