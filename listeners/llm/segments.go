package llm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// The content types of the segments of an agent's conversation
// (registry.Segment.ContentType).
const (
	// contentMessage: a message the agent received (a user message).
	contentMessage = "message"
	// contentReply: the model's text.
	contentReply = "reply"
	// contentToolCall: the model's tool calls with their results — one
	// segment, since a call must never be shown without its result.
	contentToolCall = "tool_call"
	// contentNote: a note to the model (a <huh> in words, a refused answer).
	contentNote = "note"
)

// segment is one span of a conversation that the librarian shows, folds
// or evicts whole (registry.Segment): what the history renders of one item
// — an assistant message with tool calls and the results of those calls
// form one segment, as the providers require them to stay together.
type segment struct {
	// index is its first slot's index in the session thread (its id is
	// registry.SegmentID(index)); item is its first item in the convo.
	index, item int
	// slots are the slots it covers: the calls, their results and the
	// peers' answers they render.
	slots []int
	kind  string
	// from is who wrote it: the sender of a message, the functions called.
	from string
	// msgs are its messages as the history shows them expanded (long texts
	// clipped at MaxHistoryText); text is its full content, unclipped.
	msgs []Message
	text string
	// tokens estimates msgs; bytes is the size of its slots' content.
	tokens, bytes int
	// unfolds are the segment ids its context_unfold calls named, by call
	// id (tool_call segments).
	unfolds map[string]string
	// sid and desc cache id and describe.
	sid, desc string
}

// id is the segment's id as the model sees it.
func (s *segment) id() string {
	if s.sid == "" {
		s.sid = registry.SegmentID(s.index)
	}
	return s.sid
}

// role is the role of the one message standing for the segment when it is
// folded: a note of what the agent received is the user's, of what the
// model said or did the assistant's.
func (s *segment) role() Role {
	if s.kind == contentReply || s.kind == contentToolCall {
		return Assistant
	}
	return User
}

// describe names the segment for a note: "message from alice, 3.1 KB".
func (s *segment) describe() string {
	if s.desc == "" {
		s.desc = s.describeNew()
	}
	return s.desc
}

func (s *segment) describeNew() string {
	var what string
	switch s.kind {
	case contentMessage:
		what = "message from " + s.from
	case contentReply:
		what = "your reply"
	case contentToolCall:
		what = "your calls of " + s.from
	default:
		what = "note"
	}
	return what + ", " + sizeText(s.bytes)
}

// sizeText is a byte count for people: 812 B, 3.1 KB, 2.4 MB.
func sizeText(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// segments splits the conversation into segments, in order: each reply,
// note and received message is one, each assistant message with tool calls
// one with its results (whenever they arrived) and the peers' answers they
// render. A call left without a result gets one saying so, since no
// provider takes a conversation with an unanswered call.
func (a *Agent) segments(c *convo) []*segment {
	// The result of each call, and the answers bound to it.
	results := map[string]*registry.Slot{}
	answers := map[string][]*registry.Slot{}
	for _, it := range c.items {
		switch it.kind {
		case itemResult:
			if results[it.result.ID] == nil {
				results[it.result.ID] = it.slot
			}
		case itemAnswer, itemError:
			if ref := it.slot.InReplyTo; ref != "" {
				answers[ref] = append(answers[ref], it.slot)
			}
		}
	}
	if len(c.segs) < len(c.items) {
		c.segs = append(c.segs, make([]cachedSegment, len(c.items)-len(c.segs))...)
	}
	segs := make([]*segment, 0, len(c.items))
	for i := range c.items {
		cs := &c.segs[i]
		if cs.built && (c.items[i].kind != itemCalls || cs.sameCalls(c, c.items[i].calls, results, answers)) {
			if cs.s != nil {
				segs = append(segs, cs.s)
			}
			continue
		}
		s := a.segmentOf(c, i, results, answers)
		cs.built, cs.s = true, s
		if c.items[i].kind == itemCalls {
			cs.sig = callsSig(c, c.items[i].calls, results, answers, cs.sig[:0])
		}
		if s != nil {
			segs = append(segs, s)
		}
	}
	return segs
}

// A long conversation is curated before every model call: splitting all of
// it into segments again each time cost every call in proportion to the
// whole conversation. So the convo keeps each item's segment
// (cachedSegment): an item never changes once read, and neither does its
// segment — but for an assistant message with tool calls, whose segment
// holds the calls' results and answers as they arrive: it is built again
// when what it holds of them (callsSig) changed.

// cachedSegment is the segment an item of the convo begins, once built.
type cachedSegment struct {
	built bool
	s     *segment // nil: the item begins none
	// sig is callsSig when it was built (tool call items).
	sig []int
}

// callsSig appends to dst, per call of cr, what its segment shows of it:
// the slot of its result, how many answers are bound to it, whether the
// convo holds its result and whether a cancel dropped it.
func callsSig(c *convo, cr *callsRecord, results map[string]*registry.Slot, answers map[string][]*registry.Slot,
	dst []int) []int {
	for _, call := range cr.Calls {
		sig := callSig(c, call.ID, results, answers)
		dst = append(dst, sig[:]...)
	}
	return dst
}

// callSig is one call's part of callsSig.
func callSig(c *convo, id string, results map[string]*registry.Slot, answers map[string][]*registry.Slot) [4]int {
	sig := [4]int{-1, len(answers[id]), 0, 0}
	if sl := results[id]; sl != nil {
		sig[0] = sl.Index
	}
	if c.results[id] != nil {
		sig[2] = 1
	}
	if c.cancelled[id] {
		sig[3] = 1
	}
	return sig
}

// sameCalls reports whether the segment was built with what it would show
// of cr's calls now.
func (cs *cachedSegment) sameCalls(c *convo, cr *callsRecord, results map[string]*registry.Slot,
	answers map[string][]*registry.Slot) bool {
	if len(cs.sig) != 4*len(cr.Calls) {
		return false
	}
	for k, call := range cr.Calls {
		if callSig(c, call.ID, results, answers) != [4]int(cs.sig[4*k:4*k+4]) {
			return false
		}
	}
	return true
}

// segmentOf is the segment item i of the conversation begins (nil when it
// renders none: it is rendered with its calls, or not at all). results
// and answers give the slots of the calls' results and answers (see
// segments); nil maps leave them out of its slots and bytes, which the
// messages never show.
func (a *Agent) segmentOf(c *convo, i int, results map[string]*registry.Slot, answers map[string][]*registry.Slot) *segment {
	it := c.items[i]
	s := &segment{index: it.slot.Index, item: i, slots: []int{it.slot.Index}, bytes: len(it.slot.Raw)}
	switch it.kind {
	case itemReply:
		s.kind, s.text = contentReply, string(it.slot.Raw)
		s.msgs = []Message{{Role: Assistant, Content: clipText(it.slot.Raw)}}
	case itemCalls:
		s.kind = contentToolCall
		a.callSegment(c, s, it.calls, results, answers)
	case itemFeedback:
		s.kind, s.text = contentNote, string(it.slot.Raw)
		s.msgs = []Message{{Role: User, Content: clipText(it.slot.Raw)}}
		if it.slot.PayloadType == unfoldedType { // an XML-mode unfold's answer (unfold_xml.go)
			if id := unfoldedID(s.text); id != "" {
				s.unfolds = map[string]string{"": id}
			}
		}
	case itemIncoming:
		s.kind, s.from, s.text = contentMessage, it.slot.From, a.slotText(it.slot)
		s.msgs = []Message{{Role: User, Content: "[From " + it.slot.From + "]\n" + clipText([]byte(s.text))}}
	default:
		return nil
	}
	for _, m := range s.msgs {
		s.tokens += messageTokens(m)
	}
	return s
}

// callSegment fills in a tool_call segment: the assistant message with its
// calls, then each call's result.
func (a *Agent) callSegment(c *convo, s *segment, cr *callsRecord, results map[string]*registry.Slot,
	answers map[string][]*registry.Slot) {
	m := Message{Role: Assistant, Content: clipText([]byte(cr.Content)), Reasoning: cr.Reasoning}
	var text strings.Builder
	if cr.Content != "" {
		text.WriteString(cr.Content)
		text.WriteByte('\n')
	}
	names := make([]string, 0, len(cr.Calls))
	for _, call := range cr.Calls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: call.ID, Name: call.Name,
			Arguments: json.RawMessage(clipArguments(call.Arguments)), Extra: call.Extra})
		if !slices.Contains(names, call.Name) {
			names = append(names, call.Name)
		}
	}
	s.msgs = append(s.msgs, m)
	for _, call := range cr.Calls {
		r := c.results[call.ID]
		switch {
		case r == nil && c.cancelled[call.ID]:
			r = &resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: cancelledWhileRunning}
		case r == nil:
			r = &resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: "No result: the call was abandoned."}
		}
		s.msgs = append(s.msgs, Message{Role: Tool, ToolCallID: call.ID, ToolName: call.Name,
			Content: clipText([]byte(r.Content)), IsError: r.IsError})
		fmt.Fprintf(&text, "%s(%s) → %s\n", call.Name, call.Arguments, r.Content)
		for _, sl := range answers[call.ID] {
			s.slots, s.bytes = append(s.slots, sl.Index), s.bytes+len(sl.Raw)
		}
		if sl := results[call.ID]; sl != nil {
			s.slots, s.bytes = append(s.slots, sl.Index), s.bytes+len(sl.Raw)
		}
		if call.Name == unfoldTool {
			if id, _, err := unfoldArgs([]byte(call.Arguments)); err == nil && id != "" {
				if s.unfolds == nil {
					s.unfolds = map[string]string{}
				}
				s.unfolds[call.ID] = id
			}
		}
	}
	slices.Sort(s.slots)
	s.slots = slices.Compact(s.slots)
	s.from, s.text = strings.Join(names, ", "), strings.TrimSuffix(text.String(), "\n")
}

// fullText is what unfolding a segment gives the model: the whole content
// as the history would show it, never clipped.
func (s *segment) fullText() string {
	if s.kind == contentMessage {
		return "[From " + s.from + "]\n" + s.text
	}
	return s.text
}

// unitsBack returns the units of the conversation's history as the model
// sees it without a librarian — its segments' messages, then tail's, one
// unit each — newest first (see fitUnits): only the segments read are
// built. The history renders the agent's replies and calls as assistant
// messages, each call's result right after its calls (whenever it
// arrived), everything else addressed to the agent as user messages naming
// the sender, the agent's notes as user messages; a call left without a
// result (lost, or abandoned) gets one saying so, since no provider takes a
// conversation with an unanswered call.
func (a *Agent) unitsBack(c *convo, tail []Message) func() ([]Message, bool) {
	t, i := len(tail), len(c.items)
	return func() ([]Message, bool) {
		if t > 0 {
			t--
			return tail[t : t+1], true
		}
		for i > 0 {
			i--
			if s := a.segmentOf(c, i, nil, nil); s != nil {
				return s.msgs, true
			}
		}
		return nil, false
	}
}
