package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// The agent keeps its side of a conversation in the thread's history (the
// context buffer, persisted by a durable organism) as slots of its own,
// From the agent, beside the slots the pump records for every message the
// agent receives. Everything the loop needs after a restart — what the model
// said, which calls it made, which results came back — is there.
const (
	// replyType records an assistant message without tool calls: the
	// model's text (Raw).
	replyType = "llm.reply"
	// callsType records an assistant message with tool calls (Raw: a
	// callsRecord in JSON).
	callsType = "llm.calls"
	// resultType records one tool call's result (Raw: a resultRecord in
	// JSON), whether it came back from a peer, from a local tool, or was the
	// agent's own answer to a call it could not make.
	resultType = "llm.result"
	// feedbackType records a note to the model (Raw: its text): a <huh> or
	// SystemError in words, the reason an answer was refused.
	feedbackType = "llm.feedback"
	// outputFeedbackType is feedbackType for an answer that did not fit the
	// required payload (counted: it goes back to the model once a turn).
	outputFeedbackType = "llm.output-feedback"
	// namelessFeedbackType is feedbackType for a reply whose only tool calls
	// had no function name (counted: it goes back to the model once a turn).
	namelessFeedbackType = "llm.nameless-feedback"
	// haltType records that the loop halted the turn (Raw: the reason); it
	// is not shown to the model.
	haltType = "llm.halt"
)

// The records are kept in a slot twice: as JSON (Raw: what is persisted
// and restored) and, while the process lives, decoded (Payload), so that
// reading a conversation parses only what a restart restored.

// callsRecord is an assistant message with tool calls, as kept in a slot.
type callsRecord struct {
	Content string       `json:"content,omitempty"`
	Calls   []storedCall `json:"calls"`
	// Reasoning is the reply's Reply.Reasoning, sent back with the calls.
	Reasoning json.RawMessage `json:"reasoning,omitempty"`
	// sum caches the progress guard's digest (nil: not computed yet).
	sum *uint64
}

// replyRecord is what a reply slot keeps decoded: the digest of its text.
type replyRecord struct{ sum uint64 }

// storedCall is one tool call as kept: its (possibly re-minted) id, the
// function name and the arguments exactly as the model wrote them.
type storedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Extra is the call's ToolCall.Extra, sent back with it.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// resultRecord is one tool call's result as kept.
type resultRecord struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"error,omitempty"`
}

// itemKind classifies a history slot for the loop.
type itemKind uint8

const (
	itemOther    itemKind = iota // not part of the agent's conversation
	itemIncoming                 // a message to the agent: a user message
	itemAnswer                   // a message answering one of the agent's calls (rendered by its result)
	itemError                    // a <huh>, SystemError or refusal the pump delivered (rendered by the agent's feedback)
	itemReply                    // the model's text
	itemCalls                    // the model's tool calls
	itemResult                   // a tool call's result
	itemFeedback                 // a note to the model
	itemHalt                     // the loop halted the turn
)

// item is one slot as the loop reads it.
type item struct {
	kind   itemKind
	slot   *registry.Slot
	calls  *callsRecord
	result *resultRecord
}

// convo is a conversation's history as the loop reads it.
type convo struct {
	items []item
	// results holds the calls' results by call id.
	results map[string]*resultRecord
	// pending are the calls of the last calls item without a result yet:
	// the model is not asked again until they have one. pendingSince is
	// when they were made.
	pending      []storedCall
	pendingSince time.Time
	// latest is the time of the newest slot (the history's clock: the
	// message being handled was recorded then).
	latest time.Time
	// ids are every call id used in the conversation.
	ids map[string]bool
	// turnStart is the index of the item that opened the current turn (the
	// caller's latest message), -1 when there is none.
	turnStart int
	// caller is the conversation's caller ("" when unknown).
	caller string
	// marked is set by a cancel mark of the pump and cleared by the next
	// message to the agent: a reply the agent saved in between was saved
	// after the cancel landed, and was dropped with its answer.
	marked bool
	// held is the step a halt stopped during its local tools, when no item
	// came after it (see heldStepType).
	held *heldStep
	// cancelled are the calls a cancel mark (xmlpipe.CancelMarkType) found
	// pending, by id: their results never come, and none is awaited.
	cancelled map[string]bool
	// msgs counts the messages the items render (see renderedMessages).
	msgs int
	// tc is the history the convo was read from (nil: several threads',
	// or none), next how many of its slots it holds, and diverged reports
	// that it no longer holds exactly slots 0…next-1 in order (see
	// convoCache).
	tc       *registry.ThreadContext
	next     int
	diverged bool
	// segs are the items' segments as the librarian last split them, by
	// item (segments.go).
	segs []cachedSegment
	// prior are the segments recorded beside the history as of its
	// TiersVersion priorVer, by first slot (nil: not read; see priorOf).
	prior    map[int]registry.Segment
	priorVer uint64
}

// readConvo reads the history slots of a conversation whose caller is caller
// ("" when unknown).
func (a *Agent) readConvo(slots []registry.Slot, caller string) *convo {
	c := &convo{results: map[string]*resultRecord{}, ids: map[string]bool{}, turnStart: -1, caller: caller,
		items: make([]item, 0, len(slots)+8)}
	for i := range slots {
		c.add(a, &slots[i])
	}
	return c
}

// add reads one more slot of the conversation (kept by reference: slots
// are values no one changes).
func (c *convo) add(a *Agent, s *registry.Slot) {
	if s.Time.After(c.latest) {
		c.latest = s.Time
	}
	it := item{slot: s}
	switch {
	case s.PayloadType == xmlpipe.CancelMarkType && s.From == "" && s.To == "":
		c.marked = true
		if !c.cancelMark(s, &it) {
			return
		}
	case s.From == a.Name && s.To == "":
		switch s.PayloadType {
		case replyType:
			if c.marked {
				return // saved after the cancel landed: nobody got it
			}
			it.kind = itemReply
		case callsType:
			cr, ok := s.Payload.(*callsRecord)
			if !ok {
				cr = &callsRecord{}
				if json.Unmarshal(s.Raw, cr) != nil {
					return
				}
			}
			it.kind, it.calls = itemCalls, cr
			c.pending, c.pendingSince = c.pending[:0], s.Time
			for _, call := range cr.Calls {
				c.ids[call.ID] = true
				if c.results[call.ID] == nil {
					c.pending = append(c.pending, call)
				}
			}
		case resultType:
			rr, ok := s.Payload.(*resultRecord)
			if !ok {
				rr = &resultRecord{}
				if json.Unmarshal(s.Raw, rr) != nil {
					return
				}
			}
			if c.results[rr.ID] != nil {
				return
			}
			it.kind, it.result = itemResult, rr
			c.results[rr.ID] = rr
			c.pending = slices.DeleteFunc(c.pending, func(call storedCall) bool { return call.ID == rr.ID })
		case feedbackType, outputFeedbackType, namelessFeedbackType, unfoldedType:
			it.kind = itemFeedback
			if s.PayloadType == feedbackType && string(s.Raw) == cancelledNote {
				c.retractReply()
			}
		case haltType:
			// A halt ends the turn: calls still without a result were
			// never made (a history recorded before their results were),
			// so nothing waits for them.
			it.kind = itemHalt
			c.pending = c.pending[:0]
		case heldStepType:
			c.held = readHeldStep(s)
			return
		default:
			return
		}
	case s.To == a.Name && c.marked:
		c.marked = false
		c.add(a, s) // read as any message to the agent
		return
	case s.To == a.Name && isErrorPayload(s):
		it.kind = itemError
	case s.To == a.Name && s.InReplyTo != "":
		it.kind = itemAnswer
	case s.To == a.Name:
		it.kind = itemIncoming
		if c.caller != "" && strings.EqualFold(s.From, c.caller) {
			c.turnStart = len(c.items)
		}
	default:
		return
	}
	c.items = append(c.items, it)
	c.msgs += renderedMessages(it)
	c.held = nil
}

// retractReply takes back the reply that is the latest item: its turn's
// answer was cancelled as it was saved (Agent.saveReply), so nobody got it.
func (c *convo) retractReply() {
	n := len(c.items) - 1
	if n < 0 || c.items[n].kind != itemReply {
		return
	}
	c.msgs -= renderedMessages(c.items[n])
	c.items = c.items[:n]
	if n < len(c.segs) {
		c.segs[n] = cachedSegment{} // the next item there is another
	}
}

// renderedMessages is how many chat messages the history renders of an
// item (see Agent.segments): an assistant message with its calls and one
// result each, or one message, or none.
func renderedMessages(it item) int {
	switch it.kind {
	case itemCalls:
		return 1 + len(it.calls.Calls)
	case itemReply, itemFeedback, itemIncoming:
		return 1
	}
	return 0
}

// cancelMark reads the pump's cancel mark s: the calls pending then were
// dropped with the cancelled answer, so none is awaited any more (each
// reads as cancelled, unless a result of it comes all the same), and the
// mark reads as the note that the user cancelled the answer. A mark that
// finds nothing pending is not read (false): the agent was answering when
// the cancel came, and noted it itself (Agent.cancelled), or had answered.
func (c *convo) cancelMark(s *registry.Slot, it *item) bool {
	if len(c.pending) == 0 {
		return false
	}
	if c.cancelled == nil {
		c.cancelled = map[string]bool{}
	}
	for _, call := range c.pending {
		c.cancelled[call.ID] = true
	}
	c.pending = c.pending[:0]
	note := *s
	note.Raw = []byte(cancelledNote)
	it.slot, it.kind = &note, itemFeedback
	return true
}

// lastOwn returns the kind of the agent's latest slot of its own
// (itemOther when it has none): a reply, calls, a result, a note or a halt.
func (c *convo) lastOwn() itemKind {
	for i := len(c.items) - 1; i >= 0; i-- {
		switch k := c.items[i].kind; k {
		case itemReply, itemCalls, itemResult, itemFeedback, itemHalt:
			return k
		}
	}
	return itemOther
}

// resultUnread reports whether the result of call id is recorded, no call
// waits for one, and since then the model has made only steps that ended
// in the handling (calls all answered here, notes): the handling of the
// message that brought it ended before the model answered (a halt, a
// crash) — perhaps after such steps, which stay and are read again.
func (c *convo) resultUnread(id string) bool {
	if len(c.pending) > 0 {
		return false
	}
	for i := len(c.items) - 1; i >= 0; i-- {
		switch it := c.items[i]; it.kind {
		case itemResult:
			if it.result.ID == id {
				return true
			}
		case itemCalls, itemFeedback:
			if !c.stepDone(it) {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// noteUnread reports whether the note on an error, text, is the agent's
// latest such note (of either kind: the kind was chosen by what preceded
// it), and since it the model has made only steps that ended in the
// handling (see resultUnread): it was recorded, but the handling that
// recorded it was interrupted before the model answered.
func (c *convo) noteUnread(text string) bool {
	for i := len(c.items) - 1; i >= 0; i-- {
		switch it := c.items[i]; it.kind {
		case itemFeedback:
			if k := it.slot.PayloadType; (k == feedbackType || k == outputFeedbackType) && string(it.slot.Raw) == text {
				return true
			}
		case itemResult:
		case itemCalls:
			if !c.stepDone(it) {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// stepDone reports whether an item of the agent's is part of a step that
// ended within one handling: a note, or calls that all have their results.
func (c *convo) stepDone(it item) bool {
	if it.kind != itemCalls {
		return it.kind == itemFeedback
	}
	for _, call := range it.calls.Calls {
		if c.results[call.ID] == nil {
			return false
		}
	}
	return true
}

// answered reports whether the agent's latest assistant message was text
// (an answer), not tool calls.
func (c *convo) answered() bool {
	for i := len(c.items) - 1; i >= 0; i-- {
		switch c.items[i].kind {
		case itemReply:
			return true
		case itemCalls:
			return false
		}
	}
	return false
}

// isErrorPayload reports whether a slot records a <huh>, SystemError or refusal the
// pump delivered.
func isErrorPayload(s *registry.Slot) bool {
	return (s.From == "core" || s.From == "system") &&
		(s.PayloadType == "huh" || s.PayloadType == "SystemError" || s.PayloadType == "refusal")
}

// pendingCall returns the pending call with id, if any.
func (c *convo) pendingCall(id string) (storedCall, bool) {
	for _, call := range c.pending {
		if call.ID == id {
			return call, true
		}
	}
	return storedCall{}, false
}

// iterations counts the model calls of the current turn.
func (c *convo) iterations() int {
	n := 0
	for _, it := range c.items[c.turnStart+1:] {
		if it.kind == itemReply || it.kind == itemCalls {
			n++
		}
	}
	return n
}

// outputFeedbacks counts the refused answers of the current turn.
func (c *convo) outputFeedbacks() int { return c.feedbacks(outputFeedbackType) }

// feedbacks counts the notes of kind (a feedback slot type) given to the
// model in the current turn.
func (c *convo) feedbacks(kind string) int {
	n := 0
	for _, it := range c.items[c.turnStart+1:] {
		if it.kind == itemFeedback && it.slot.PayloadType == kind {
			n++
		}
	}
	return n
}

// slotText is the text of a message the agent received: its payload's text
// field, else the payload as JSON (decoded in the agent's own payload type
// when the history was restored without the decoded value), else its XML.
func (a *Agent) slotText(s *registry.Slot) string {
	v := s.Payload
	if v == nil && a.Lookup != nil {
		if pt, ok := a.Lookup(a.Name); ok && pt.Matches(s.PayloadType, pt.Namespace()) {
			v, _ = pt.Decode(s.Raw)
		}
	}
	if v != nil {
		if text, ok := payloadContent(v); ok {
			return text
		}
	}
	return string(s.Raw)
}

// failedResult reports whether a tool's result payload says the call
// failed: the tools' convention is a top-level string field Error, set only
// when the call was refused or failed (calculate, run_command, fetch, a
// mounted MCP tool, …) — in the payload itself, or in the JSON text the
// pump made of it for the agent (its usual form). The model reads the result all the same; a provider
// with a flag for it (Anthropic's is_error) gets it set.
func failedResult(v any) bool {
	if t, ok := stage.PayloadText(v); ok {
		// A result the pump turned into the agent's text: its JSON form.
		var r struct {
			Error any `json:"Error"`
		}
		if json.Unmarshal([]byte(t), &r) != nil {
			return false
		}
		s, ok := r.Error.(string)
		return ok && s != ""
	}
	rv, ok := stage.Deref(reflect.ValueOf(v))
	if !ok || rv.Kind() != reflect.Struct {
		return false
	}
	f, ok := stage.Deref(rv.FieldByName("Error"))
	return ok && f.Kind() == reflect.String && f.String() != ""
}

// payloadContent is what a model reads of a payload: its text field's text,
// else its JSON form.
func payloadContent(v any) (string, bool) {
	if t, ok := stage.PayloadText(v); ok {
		return t, true
	}
	pt, err := xmlpipe.NewPayloadType(reflect.TypeOf(v))
	if err != nil {
		return "", false
	}
	obj, err := codec.JSONOf(pt.Model(), v)
	if err != nil {
		return "", false
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", false
	}
	return string(b), true
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

// maxArgumentsStart is how much of a call's arguments cut from the history
// the model is shown.
const maxArgumentsStart = 1 << 10

// cutArguments stands in the history for a call's arguments longer than
// MaxHistoryText: a JSON object, which every provider takes as arguments.
type cutArguments struct {
	Note      string `json:"note"`
	BeganWith string `json:"began_with"`
}

// clipArguments returns a call's arguments as the history shows them to the
// model: as the model wrote them up to MaxHistoryText bytes; longer ones are
// replaced by a JSON object saying how many bytes were left out and how they
// began, so one huge call cannot make every later request of the
// conversation too large.
func clipArguments(args string) string {
	if len(args) <= MaxHistoryText {
		return args
	}
	n := maxArgumentsStart
	for n > 0 && !utf8.RuneStart(args[n]) {
		n--
	}
	b, err := json.Marshal(cutArguments{BeganWith: args[:n],
		Note: fmt.Sprintf("the %d bytes of these arguments are left out of the history", len(args))})
	if err != nil {
		return "{}"
	}
	return string(b)
}

// digestSeed seeds the progress guard's digests: they are compared only
// within one process (cached with the records, recomputed after a restart).
var digestSeed = maphash.MakeSeed()

// digest is the progress guard's fingerprint of an assistant message: its
// text case folded, whitespace runs collapsed and dropped beside markup,
// and its tool calls' names and arguments (compacted).
func digest(text string, calls []storedCall) uint64 {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	writeNormalized(&h, text)
	for _, c := range calls {
		h.WriteByte(0)
		h.WriteString(c.Name)
		h.WriteByte(0)
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(c.Arguments)) == nil {
			h.Write(buf.Bytes())
		} else {
			h.WriteString(c.Arguments)
		}
	}
	return h.Sum64()
}

// writeNormalized writes text to h case folded, with each whitespace run
// one space, none at either end and none beside '<' or '>' (which changes
// nothing in markup).
func writeNormalized(h *maphash.Hash, text string) {
	space, last := false, rune(0)
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = last != 0
			continue
		}
		if space && r != '<' && r != '>' && last != '<' && last != '>' {
			h.WriteByte(' ')
		}
		space = false
		r = unicode.ToLower(r)
		var b [utf8.UTFMax]byte
		h.Write(b[:utf8.EncodeRune(b[:], r)])
		last = r
	}
}

// itemDigest is digest of an assistant item (cached in its record).
func itemDigest(it item) uint64 {
	if it.kind == itemCalls {
		if it.calls.sum == nil {
			d := digest(it.calls.Content, it.calls.Calls)
			it.calls.sum = &d
		}
		return *it.calls.sum
	}
	if r, ok := it.slot.Payload.(*replyRecord); ok {
		return r.sum
	}
	return digest(string(it.slot.Raw), nil)
}

// repeats counts how many of the agent's latest assistant messages of the
// current turn in a row (the newest one recorded included) have the
// fingerprint d. An earlier turn's answer is no repeat: a continued
// conversation may well be answered "Done." twice.
func (c *convo) repeats(d uint64) int {
	n := 0
	for i := len(c.items) - 1; i > c.turnStart; i-- {
		it := c.items[i]
		if it.kind != itemReply && it.kind != itemCalls {
			continue
		}
		if itemDigest(it) != d {
			break
		}
		n++
	}
	return n
}
