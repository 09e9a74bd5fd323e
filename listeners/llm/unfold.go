package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// unfoldTool is the function that reads a folded or evicted segment.
const unfoldTool = "context_unfold"

// unfoldParams is the JSON Schema of context_unfold's arguments.
const unfoldParams = `{"type":"object","properties":{` +
	`"id":{"type":"string","description":"the id of a folded or evicted part of this conversation, as its note shows it (\"s12\"); leave it out to list them"},` +
	`"offset":{"type":"integer","minimum":0,"description":"the byte offset to go on reading a long part from (the previous answer gives it)"}},` +
	`"additionalProperties":false}`

// unfoldMoreMark begins the line saying how to read on.
const unfoldMoreMark = "[more:"

// maxUnfoldList bounds the list context_unfold gives without an id.
const maxUnfoldList = 4 << 10

// unfoldArgs reads context_unfold's arguments: {"id"?, "offset"?}.
func unfoldArgs(args []byte) (id string, offset int, err error) {
	var a struct {
		ID     *string `json:"id"`
		Offset *int    `json:"offset"`
	}
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return "", 0, unfoldArgsError(err)
		}
	}
	if a.ID != nil {
		id = strings.TrimSpace(*a.ID)
	}
	if a.Offset != nil {
		if *a.Offset < 0 {
			return "", 0, errors.New("offset must not be negative")
		}
		offset = *a.Offset
	}
	return id, offset, nil
}

// unfoldArgsError words a decoding error of context_unfold's arguments
// for the model: which argument, and what it must be.
func unfoldArgsError(err error) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		switch te.Field {
		case "id":
			return errors.New(`"id" must be a string, like "s12"`)
		case "offset":
			return errors.New(`"offset" must be a whole number of bytes, like 4096`)
		}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf(`the arguments are "id" and "offset", not %s`, name)
	}
	return errors.New(`the arguments must be a JSON object: {"id": "s12"} (and "offset" to read on)`)
}

// unfoldLocal is the context_unfold function (seed 000 §6.3: unfold when
// the agent asks).
func (a *Agent) unfoldLocal() LocalTool {
	return LocalTool{
		Spec: ToolSpec{Name: unfoldTool, Parameters: json.RawMessage(unfoldParams),
			Description: "Reads a folded or evicted part of this conversation in full: give the id its note shows " +
				"(\"s12\"). Without an id it lists the folded and evicted parts with their summaries."},
		Call: a.callUnfold,
	}
}

// callUnfold answers context_unfold: the segment's full content — a page
// at a time when it is longer than a quarter of the context window, with
// the offset to read on — and records it expanded (the librarian keeps it
// in the context for the rest of the turn, as far as the budget allows).
// Without an id it lists the folded and evicted segments.
func (a *Agent) callUnfold(_ context.Context, lc LocalCall) (LocalResult, error) {
	id, offset, err := unfoldArgs(lc.Arguments)
	if err != nil {
		return LocalResult{}, err
	}
	text, err := a.unfold(lc.Thread, id, offset, unfoldSyntax(false))
	if err != nil {
		return LocalResult{}, err
	}
	return LocalResult{Content: text}, nil
}

// unfold reads segment id of thread's conversation from offset (see
// callUnfold), or lists the folded and evicted segments when id is "";
// how words the way to read on in the model's tool calling mode.
func (a *Agent) unfold(thread, id string, offset int, how unfoldSyntax) (string, error) {
	tc, ok := a.History.Thread(thread)
	if !ok {
		return "", errors.New("this conversation has no history")
	}
	segs := a.segments(a.readConvo(tc.Slots(), ""))
	recorded := map[int]registry.Segment{}
	for _, s := range tc.Recorded() {
		recorded[s.Index] = s
	}
	if id == "" {
		return unfoldList(segs, recorded, a.Librarian, how), nil
	}
	var seg *segment
	if idx, ok := registry.ParseSegmentID(id); ok {
		for _, s := range segs {
			if s.index == idx {
				seg = s
			}
		}
	}
	if seg == nil {
		// The range that is, rather than an example id the model could
		// take for a real one.
		if len(segs) == 0 {
			return "", fmt.Errorf("there is no part %q of this conversation: it has none yet", id)
		}
		first, last := segs[0].index, segs[0].index
		for _, s := range segs {
			first, last = min(first, s.index), max(last, s.index)
		}
		return "", fmt.Errorf("there is no part %q of this conversation: its parts run from %s to %s; %s to list the folded ones",
			id, registry.SegmentID(first), registry.SegmentID(last), how.list())
	}
	text := seg.fullText()
	if offset > len(text) {
		return "", fmt.Errorf("offset %d is past the end of %s (%d bytes)", offset, id, len(text))
	}
	for offset > 0 && offset < len(text) && !utf8.RuneStart(text[offset]) {
		offset--
	}
	_, traits := a.settings()
	end := min(len(text), offset+min(max(a.contextWindow(traits), 1024), MaxHistoryText))
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end--
	}
	rec := registry.Segment{Index: seg.index, Slots: seg.slots, ContentType: seg.kind, Tier: registry.TierExpanded,
		Bytes: seg.bytes, Tokens: seg.tokens}
	if p, ok := recorded[seg.index]; ok {
		rec.Relevance, rec.Scored, rec.Summary, rec.SummaryBy = p.Relevance, p.Scored, p.Summary, p.SummaryBy
	}
	if _, err := a.History.PutSegments(thread, []registry.Segment{rec}); err != nil {
		a.logger().Warn("librarian: unfolded segment not recorded", "agent", a.Name, "thread", thread, "segment", id,
			"error", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s (%s) unfolded", unfoldedPrefix, id, seg.describe())
	if offset > 0 || end < len(text) {
		fmt.Fprintf(&b, ", bytes %d to %d of %d", offset, end, len(text))
	}
	b.WriteString(":\n")
	b.WriteString(text[offset:end])
	if end < len(text) {
		fmt.Fprintf(&b, "\n%s %s to read on]", unfoldMoreMark, how.readOn(id, end))
	}
	return b.String(), nil
}

// unfoldedPrefix begins what unfolding a segment gives: "Part s12 (…".
const unfoldedPrefix = "Part "

// unfoldList lists the folded and evicted segments, newest first, with
// their summaries (extractive ones for those without).
func unfoldList(segs []*segment, recorded map[int]registry.Segment, l *Librarian, how unfoldSyntax) string {
	words := DefaultSummaryWords
	if l != nil {
		words = l.summaryWords()
	}
	var b strings.Builder
	listed := 0
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		r, ok := recorded[s.index]
		if !ok || r.Tier == registry.TierExpanded {
			continue
		}
		sum := r.Summary
		if sum == "" {
			sum = extractive(s.text, words*8)
		}
		line := fmt.Sprintf("%s (%s; %s): %s\n", s.id(), r.Tier, s.describe(), sum)
		if b.Len()+len(line) > maxUnfoldList {
			left := 0
			for _, s := range segs[:i+1] {
				if r, ok := recorded[s.index]; ok && r.Tier != registry.TierExpanded {
					left++
				}
			}
			fmt.Fprintf(&b, "… and %d older ones.\n", left)
			break
		}
		b.WriteString(line)
		listed++
	}
	if listed == 0 {
		return "Nothing of this conversation is folded or evicted: all of it is in your context."
	}
	return "Folded and evicted parts of this conversation, newest first (" + how.name() + " with an id reads one):\n" +
		strings.TrimSuffix(b.String(), "\n")
}
