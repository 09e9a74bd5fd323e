package llm

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

// TestLoopControlStreamHidesTokens: under loop control the answer streamed
// to the caller (console, /ws) shows no token line, wherever the stream's
// pieces split it — the delivered answer has them stripped, and so must
// what was shown of it. Text that only looks like the start of a token, and
// a quoted token (which decides nothing), are shown as written, all of it
// before the stream's end.
func TestLoopControlStreamHidesTokens(t *testing.T) {
	const head = "The answer is 42.\n<<<NSMAG is how tokens begin\n"
	for _, tc := range []struct {
		name string
		// answer builds the model's answer around the minted token; shown
		// is what the stream must show.
		answer, shown func(tok string) string
	}{
		{"token line last",
			func(tok string) string { return head + "> \"" + tok + "\"\n" + tok + "\n" },
			func(tok string) string { return head + "> \"" + tok + "\"\n" }},
		{"token without a newline",
			func(tok string) string { return head + tok },
			func(string) string { return head }},
		{"token, then a line like a token's start",
			func(tok string) string { return head + tok + "\r\n<<<NSMAG:V" },
			func(string) string { return head + "<<<NSMAG:V" }},
		// A token at a line's edge goes from the answer, so from what is
		// shown of it too; one in a code block stays in both.
		{"token at a line's end",
			func(tok string) string { return head + "Step. " + tok + "\n" + tok + "\n" },
			func(string) string { return head + "Step.\n" }},
		{"token at a line's start",
			func(tok string) string { return head + tok + " Step.\n" + tok },
			func(string) string { return head + "Step.\n" }},
		{"token glued to a line's end, CRLF",
			func(tok string) string { return head + "Step." + tok + "\r\nMore.\r\n" + tok },
			func(string) string { return head + "Step.\r\nMore.\r\n" }},
		{"token in a code block",
			func(tok string) string { return head + "```\nx " + tok + "\n```\n" + tok },
			func(tok string) string { return head + "```\nx " + tok + "\n```\n" }},
	} {
		for _, size := range []int{1, 3, 7, 64, 4096} {
			t.Run(fmt.Sprintf("%s/%d-byte pieces", tc.name, size), func(t *testing.T) {
				var tok string
				r, _, _ := loopAgent(t, nil, func(n int, req Request) Reply {
					if n == 0 {
						return Reply{ToolCalls: []ToolCall{magicCall("m1", "done")}}
					}
					tok = magicResults(req)[0].Content
					text := tc.answer(tok)
					for piece := range chunks(text, size) {
						req.OnDelta(Delta{Text: piece})
					}
					return Reply{Content: text}
				})
				var mu sync.Mutex
				var shown strings.Builder
				ended := false // the last piece streamed was a model call's end
				r.a.OnDelta = func(_, _ string, delta string, end bool) {
					mu.Lock()
					defer mu.Unlock()
					ended = end
					shown.WriteString(delta)
				}
				got := answerText(r.deliver("console", "what is 6*7?", ""))
				if want := aeiou.StripTokens(tc.answer(tok)); got != want {
					t.Fatalf("answer %q, want %q", got, want)
				}
				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(tc.shown(tok), shown.String()); diff != "" {
					t.Errorf("streamed text (-want +got):\n%s", diff)
				}
				if !ended {
					t.Error("text was streamed after the model call's end")
				}
			})
		}
	}
}

// chunks yields s in pieces of size bytes.
func chunks(s string, size int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			n := min(size, len(s))
			if !yield(s[:n]) {
				return
			}
			s = s[n:]
		}
	}
}
