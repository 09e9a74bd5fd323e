package console

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// bufferPayloadRunes is how much of each payload /buffer shows.
const bufferPayloadRunes = 100

// bufferAmbiguousShown is how many matching thread ids an ambiguous
// /buffer prefix names.
const bufferAmbiguousShown = 5

// cmdBuffer is /buffer <thread-id prefix>: one thread's whole context
// buffer — every slot with its index, ends, payload type and payload,
// shortened — from the history /monitor shows.
func (c *Console) cmdBuffer(ctx context.Context, arg string) {
	if arg == "" || arg == "*" {
		c.say("Usage: /buffer <thread-id>")
		return
	}
	hs, ok := c.histories(ctx, arg, "Thread not found: "+arg)
	if !ok {
		return
	}
	h, ok := oneHistory(hs, arg)
	if !ok {
		ids := make([]string, 0, bufferAmbiguousShown)
		for _, h := range hs[:min(len(hs), bufferAmbiguousShown)] {
			ids = append(ids, h.ID)
		}
		if more := len(hs) - len(ids); more > 0 {
			ids = append(ids, fmt.Sprintf("and %d more", more))
		}
		c.say(fmt.Sprintf("Ambiguous thread id %s: %d threads match (%s); give more of the id", arg, len(hs),
			strings.Join(ids, ", ")))
		return
	}
	lines := []string{"Thread: " + h.ID, fmt.Sprintf("Slots: %d", len(h.Slots)), strings.Repeat("-", 60)}
	for i, s := range h.Slots {
		lines = append(lines, fmt.Sprintf("[%d] %s -> %s: %s", i, s.From, s.To, s.PayloadType))
		if p := shorten(s.Payload, bufferPayloadRunes); p != "" {
			lines = append(lines, "    "+p)
		}
	}
	c.say(lines...)
}

// histories asks the backend for the history of the threads matching arg
// (an id prefix, or "*"); with none, or on an error, it says so (notFound
// when nothing matched) and reports false. /monitor and /buffer share it.
func (c *Console) histories(ctx context.Context, arg, notFound string) ([]organism.History, bool) {
	hs, err := c.b.Monitor(ctx, arg)
	switch {
	case err != nil:
		c.say("Error: " + err.Error())
		return nil, false
	case len(hs) == 0:
		c.say(notFound)
		return nil, false
	}
	return hs, true
}

// oneHistory picks the thread a prefix names: the only match, or the one
// whose whole id it is.
func oneHistory(hs []organism.History, prefix string) (organism.History, bool) {
	if len(hs) == 1 {
		return hs[0], true
	}
	for _, h := range hs {
		if strings.EqualFold(h.ID, prefix) {
			return h, true
		}
	}
	return organism.History{}, false
}

// shorten puts s on one line (runs of white space become one space) and
// cuts it to at most n runes, ending in "…" when cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
