package llm

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// FuzzContextUnfold: whatever arguments the model writes and whatever a
// folded message holds, context_unfold answers without panicking, and a
// page it gives is a piece of the segment's text, on rune boundaries.
func FuzzContextUnfold(f *testing.F) {
	f.Add(`{"id":"s0"}`, "hello world")
	f.Add(`{"id":"s0","offset":3}`, "Grüße 東京 ✓")
	f.Add(`{}`, "x")
	f.Add(`{"id":"s1"}`, "")
	f.Add(`{"offset":1e99}`, "a")
	f.Add(`{"id":"s0","offset":18446744073709551615}`, "b")
	f.Fuzz(func(t *testing.T, args, text string) {
		cb, err := registry.NewContextBuffer(registry.ContextConfig{})
		if err != nil {
			t.Fatal(err)
		}
		own, err := InputType("mathbot")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := stage.NewTextPayload(own.GoType(), text)
		if _, err := cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot", PayloadType: own.Name(),
			Payload: v, Raw: []byte("<x/>")}); err != nil {
			t.Fatal(err)
		}
		if _, err := cb.Fold("t", 0, "folded", extractiveBy); err != nil {
			t.Fatal(err)
		}
		a := &Agent{Name: "mathbot", History: cb, ContextWindow: 1024, Librarian: &Librarian{}, LLM: &chatFunc{t: t}}
		res, err := a.callUnfold(context.Background(), LocalCall{Agent: "mathbot", Thread: "t", Arguments: []byte(args)})
		if err != nil || !strings.HasPrefix(res.Content, "Part s0 ") {
			return
		}
		_, body, _ := strings.Cut(res.Content, ":\n")
		if k := strings.LastIndex(body, "\n"+unfoldMoreMark); k >= 0 {
			body = body[:k]
		}
		full := "[From console]\n" + text
		if !strings.Contains(full, body) {
			t.Fatalf("page %q is not in the text %q", body, full)
		}
		if utf8.ValidString(full) && !utf8.ValidString(body) {
			t.Fatalf("page %q cut inside a rune", body)
		}
	})
}

// FuzzExtractive: an extractive summary of any text stays within its
// bound and, from valid UTF-8, is valid UTF-8.
func FuzzExtractive(f *testing.F) {
	f.Add("The plan is simple. Then more.\nTotal: 42", 100)
	f.Add("<a>Q3.</a><b>x</b>", 12)
	f.Add("Übergrößenträger", 9)
	f.Fuzz(func(t *testing.T, text string, max int) {
		max %= 4096
		s := extractive(text, max)
		if len(s) > max && max > 0 {
			t.Fatalf("summary of %d bytes, bound %d", len(s), max)
		}
		if utf8.ValidString(text) && !utf8.ValidString(s) {
			t.Fatalf("summary %q is not valid UTF-8", s)
		}
		var x lexicon
		_ = relevance([]docVec{x.vector(docKey{}, text)}, x.vector(docKey{}, s))
	})
}
