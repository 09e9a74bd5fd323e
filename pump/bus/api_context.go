package bus

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// apiContextSegment is one segment of GET /api/v1/threads/{id}/context.
type apiContextSegment struct {
	ID          string  `json:"id"`
	Index       int     `json:"index"`
	Slots       []int   `json:"slots"`
	ContentType string  `json:"content_type"`
	Tier        string  `json:"tier"`
	Relevance   float64 `json:"relevance"`
	Scored      bool    `json:"scored"`
	Summary     string  `json:"summary,omitempty"`
	SummaryBy   string  `json:"summary_by,omitempty"`
	Bytes       int     `json:"byte_size"`
	Tokens      int     `json:"token_estimate"`
	From        string  `json:"from"`
	PayloadType string  `json:"payload_type"`
	Time        string  `json:"time"`
	Changed     string  `json:"changed,omitempty"`
	// Content is the original content of the segment's slots (?content=full),
	// whatever its tier.
	Content *string `json:"content,omitempty"`
	// Withheld, when set, says why neither content nor summary is shown:
	// "memory" for a segment holding what an agent asked to remember or
	// recalled, shown to the conversation's owner and admins only.
	Withheld string `json:"withheld,omitempty"`
}

// apiContextBody is GET /api/v1/threads/{id}/context.
type apiContextBody struct {
	ThreadID string              `json:"thread_id"`
	Segments []apiContextSegment `json:"segments"`
	// Tiers counts the segments by tier; Bytes and Tokens sum them all, the
	// originals (nothing is lost whatever the tiers).
	Tiers  map[string]int `json:"tiers"`
	Bytes  int            `json:"byte_size"`
	Tokens int            `json:"token_estimate"`
}

// apiThreadContext is GET /api/v1/threads/{id}/context: the thread's
// context history as segments with their tiers (seed 000 §6) — expanded,
// folded with the summary that stands in for it, or evicted — as the
// librarian of the agent holding the conversation last decided;
// ?content=full adds each segment's original content (what unfolding gives
// back). 404 when the thread has no context history.
func (s *Server) apiThreadContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	full := false
	switch r.URL.Query().Get("content") {
	case "":
	case "full":
		full = true
	default:
		writeError(w, http.StatusBadRequest, "Invalid content: want full")
		return
	}
	tc, ok := s.opts.Organism.ThreadContext(id)
	if sess := sessionOf(r.Context()); ok && sess.Profile != "" && !s.historyView(sess)(id, s.conversationOf(id)) {
		ok = false // not one for a user with a profile (live or as journaled): as if it had none
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Thread has no context history")
		return
	}
	segs := tc.Segments()
	slots := make([][]registry.Slot, len(segs))
	for i, sg := range segs {
		slots[i] = tc.SegmentSlots(sg)
	}
	memory := s.memoryReader(sessionOf(r.Context())).contextMemory(s.conversationOf(id), segs, slots)
	b := apiContextBody{ThreadID: id, Segments: make([]apiContextSegment, 0, len(segs)),
		Tiers: map[string]int{string(registry.TierExpanded): 0, string(registry.TierFolded): 0,
			string(registry.TierEvicted): 0}}
	for i, sg := range segs {
		out := apiContextSegment{ID: sg.ID, Index: sg.Index, Slots: sg.Slots, ContentType: sg.ContentType,
			Tier: string(sg.Tier), Relevance: sg.Relevance, Scored: sg.Scored, Summary: sg.Summary,
			SummaryBy: sg.SummaryBy, Bytes: sg.Bytes, Tokens: sg.Tokens, From: sg.From, PayloadType: sg.PayloadType,
			Time: stamp(sg.Time)}
		if !sg.Changed.IsZero() {
			out.Changed = stamp(sg.Changed)
		}
		if memory.withholds(sg) {
			out.Summary, out.Withheld = "", withheldMemory
		} else if full {
			var c strings.Builder
			for k, sl := range slots[i] {
				if k > 0 {
					c.WriteByte('\n')
				}
				c.WriteString(strings.ToValidUTF8(string(sl.Raw), string(utf8.RuneError)))
			}
			text := c.String()
			out.Content = &text
		}
		b.Tiers[out.Tier]++
		b.Bytes += sg.Bytes
		b.Tokens += sg.Tokens
		b.Segments = append(b.Segments, out)
	}
	writeJSON(w, http.StatusOK, b)
}
