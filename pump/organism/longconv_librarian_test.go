package organism_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestLongConversationLibrarian: a curated conversation (librarian, a
// small window) goes on for many turns with a restart in between: every
// request stays within the window, opens — once the oldest segments are
// evicted — with the note that lists them and says how to read them, ends
// with the latest message whole, and context_unfold gives back the first
// message exactly, long after it was evicted and across the restart.
func TestLongConversationLibrarian(t *testing.T) {
	const turns, restartAt, unfoldAt, window = 120, 60, 100, 1024
	m := newLongModel(t, func(msgs []llmtest.Message) []string {
		last := msgs[len(msgs)-1]
		if k := lastTurn(msgs); k == unfoldAt {
			if last.Role == "user" {
				return []string{llmtest.ToolCall("u1", "context_unfold", `{"id":"s0"}`)}
			}
			return []string{"unfolded: " + last.Content}
		}
		return longReply(msgs)
	})
	dir := t.TempDir()
	extra := fmt.Sprintf("    context_window: %d\n    librarian: {}\n", window)
	o := startLongConv(t, m.URL, dir, extra)
	defer func() { _ = o.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	conv, evicted := "", false
	for k := 1; k <= turns; k++ {
		if k == restartAt {
			if err := o.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			o = startLongConv(t, m.URL, dir, extra)
		}
		first := m.Count()
		ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		conv = ev.Conversation
		text, _ := organism.PayloadText(ev.Payload)
		for n := first; n < m.Count(); n++ {
			msgs := m.Request(t, n)
			size := 0
			for _, msg := range msgs {
				size += len(msg.Content)
				for _, c := range msg.ToolCalls {
					size += len(c.Function.Name) + len(c.Function.Arguments)
				}
			}
			if size/4 > window {
				t.Fatalf("turn %d: a request of about %d tokens for a window of %d", k, size/4, window)
			}
		}
		got := transcript(m.Request(t, first))
		if got[len(got)-1] != "U "+turnText(k) {
			t.Fatalf("turn %d: the request ends with %q", k, got[len(got)-1])
		}
		if strings.Contains(got[0], "evicted to fit the context window") {
			evicted = true
			if !strings.Contains(got[0], "s0") || !strings.Contains(got[0], "context_unfold") {
				t.Fatalf("turn %d: the eviction note %q", k, got[0])
			}
		}
		if k == unfoldAt {
			if !strings.HasPrefix(text, "unfolded: Part s0") || !strings.HasSuffix(text, "\nturn 1") {
				t.Fatalf("turn %d: unfolding s0 gave %q", k, text)
			}
		}
	}
	if !evicted {
		t.Fatal("nothing was ever evicted")
	}
}
