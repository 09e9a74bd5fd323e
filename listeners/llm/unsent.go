package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// A handling that recorded its step — the model's calls, its answer (in
// XML mode perhaps messages to peers), a halt — can be interrupted before
// the pump journals what the step sends: a crash, an immediate shutdown.
// The pump then hands the message again without recording it a second
// time (it records every message before its handler runs, save a
// re-delivery of one already recorded), and recovery re-delivers a message
// only when nothing the agent sent in its conversation after it is
// journaled. So when the message handled now is not among the messages
// recorded after the agent's latest step, the step is its own handling's,
// under way again, and what it sends never went out: it is sent again as
// recorded, the model not asked again. Messages recorded after the step
// (another message came in before the crash) do not hide it; they are
// handled again in their turn, and find the step sent. A journaled
// message's slots carry its journal seq (registry.Slot.Seq): the message
// handled again then matches exactly its own slot, and the step is its
// handling's when the step records the same seq; the content match below
// serves messages (and slots) without one.

// unsentStep returns the agent's latest step when the message handled now
// (payload, or the error de, with md) is not among the messages recorded
// after it: calls that wait for results, an answer, a halt. ok is false
// when there is none, or the message came after it (the step went out).
// Only the agent's notes and tool results may follow a step of the same
// handling; an answer followed by a note of its own is no step to give
// again (the note asked the model again: loop control's continue, an answer
// that did not fit), save XML-mode messages to peers beside unfolded
// context.
func (a *Agent) unsentStep(st *turnState, payload any, de *xmlpipe.DeliveryError) (step item, ok bool) {
	c, noted, handledAfter := st.c, false, false
	for i := len(c.items) - 1; i >= 0; i-- {
		switch it := c.items[i]; it.kind {
		case itemIncoming, itemAnswer, itemError:
			handledAfter = handledAfter || a.records(it.slot, payload, de, st.md, st.seq)
		case itemResult, itemFeedback:
			noted = true
		case itemCalls:
			return it, len(c.pending) > 0 && a.ownStep(st, it, handledAfter)
		case itemReply:
			if noted && (st.mode != XMLTools || len(peerElements(string(it.slot.Raw), a.xmlTargets(st.md))) == 0) {
				return item{}, false
			}
			return it, a.ownStep(st, it, handledAfter)
		case itemHalt:
			return it, !noted && a.ownStep(st, it, handledAfter)
		default:
			return item{}, false
		}
	}
	return item{}, false
}

// ownStep reports whether the agent's step was made by the handling of the
// message handled now: the step records the message's journal seq, or —
// when either has none — no message recorded after it (handledAfter) is
// this one and it was not made while this handling waited.
func (a *Agent) ownStep(st *turnState, step item, handledAfter bool) bool {
	if st.seq != 0 && step.slot.Seq != 0 {
		return step.slot.Seq == st.seq
	}
	return !handledAfter && !a.madeWhileWaiting(st, step)
}

// madeWhileWaiting reports whether the agent's step was recorded after the
// handling under way began (st.before): by the handling of an earlier
// message, which held the conversation's lock while this one waited for it
// and returned the step to the pump. The message handled now was recorded
// before that step — while the model was asked — yet is not the one the
// step answers (a caller's message would have overtaken the reply; see
// overtaken).
func (a *Agent) madeWhileWaiting(st *turnState, step item) bool {
	return step.slot.ThreadID == st.md.ThreadID && step.slot.Index >= st.before
}

// historyLen is how many slots thread id's history holds (0: none).
func (a *Agent) historyLen(id string) int {
	if tc, ok := a.History.Thread(id); ok {
		return tc.Len()
	}
	return 0
}

// records reports whether slot s (a message to the agent) may record the
// message handled now (payload, or the error de, with md, journaled at
// seq): the same thread and, when both the slot and the message have a
// journal seq, the same seq; else the same sender and ref, and — for a
// message whose payload can be compared — the same payload. When that
// cannot be told it does: taking a later message for this one only leaves
// the step unsent (as a new message finds it), while the converse would
// send it twice.
func (a *Agent) records(s *registry.Slot, payload any, de *xmlpipe.DeliveryError, md xmlpipe.Metadata, seq int64) bool {
	if s.ThreadID != md.ThreadID {
		return false
	}
	if seq != 0 && s.Seq != 0 {
		return s.Seq == seq
	}
	if s.From != md.From || s.InReplyTo != md.InReplyTo {
		return false
	}
	if de != nil || payload == nil {
		return true
	}
	if isErrorPayload(s) {
		return false
	}
	if s.Payload != nil {
		return reflect.DeepEqual(s.Payload, payload)
	}
	// Restored after a restart: decoded again from its canonical bytes, and
	// compared by what the model reads of it (a type made here may decode
	// what the pump's would into other names).
	want, ok := payloadContent(payload)
	if !ok {
		return true
	}
	pt, err := a.payloadTypeOf(payload)
	if err != nil {
		return true
	}
	v, err := pt.Decode(s.Raw)
	if err != nil {
		return true
	}
	got, ok := payloadContent(v)
	return !ok || got == want
}

// payloadTypeOf returns the payload type of a payload handed to the agent:
// its own when it is one, else one made for its Go type.
func (a *Agent) payloadTypeOf(payload any) (*xmlpipe.PayloadType, error) {
	t := reflect.TypeOf(payload)
	if a.Lookup != nil {
		if pt, ok := a.Lookup(a.Name); ok && (pt.GoType() == t || reflect.PointerTo(pt.GoType()) == t) {
			return pt, nil
		}
	}
	return xmlpipe.NewPayloadType(t)
}

// redo sends again the step of a handling that recorded it and was
// interrupted before it went out (see unsentStep), when the message
// handled now is that handling's. done is false when there is no such
// step, or it cannot be given again as it was: the message is handled as
// before.
func (a *Agent) redo(ctx context.Context, st *turnState, payload any, de *xmlpipe.DeliveryError) (resp xmlpipe.Response,
	done bool, err error) {
	step, ok := a.unsentStep(st, payload, de)
	switch {
	case !ok:
		return nil, false, nil
	case step.kind == itemCalls:
		resp, done = a.resend(ctx, st, slices.Clone(st.c.pending))
		return resp, done, nil
	case step.kind == itemHalt:
		resp, err = a.haltAnswer(st, string(step.slot.Raw))
		return resp, true, err
	}
	resp, done = a.reanswer(st, step)
	return resp, done, nil
}

// resend makes again the calls of a handling that recorded them and was
// interrupted before their messages went out (see unsentStep), exactly as
// recorded: the same ids (the answers' refs), functions and arguments, so
// the conversation goes on as if the interruption had not happened, the
// model not asked again. A call that cannot be made now (its peer is gone
// since) is answered at once, as dispatch does. A halt that stops it keeps
// the messages local tools answered their calls with before it as a held
// step (keepSends), which the re-send after the resume sends instead of
// running those tools again. It returns the messages to send, or done
// false when every call was answered here and the model is asked next.
func (a *Agent) resend(ctx context.Context, st *turnState, calls []storedCall) (resp xmlpipe.Response, done bool) {
	a.logger().Info("the agent's calls are recorded but their messages never went out (the handling that made "+
		"them was interrupted): they are sent again", "agent", a.Name, "thread", st.md.ThreadID, "calls", len(calls))
	raw := make([]ToolCall, len(calls))
	for i, c := range calls {
		raw[i] = ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)}
	}
	box := a.toolbox(st.md.Peers)
	var sent map[string]*xmlpipe.SendResponse
	if h := st.c.held; h != nil {
		sent = a.sent(st, h) // kept by a re-send a halt stopped
	}
	sends, results, stopped := a.dispatch(ctx, st, box, raw, calls, nil, sent)
	switch {
	case errors.Is(stopped, xmlpipe.ErrConversationKilled):
		return a.killed(st), true
	case errors.Is(stopped, xmlpipe.ErrCancelled):
		// The calls are in the conversation already: those left without a
		// result get one saying they were not made.
		answered := map[string]bool{}
		for _, r := range results {
			answered[r.ID] = true
			a.recordResult(st, r)
		}
		for _, call := range calls {
			if !answered[call.ID] {
				a.recordResult(st, resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: notMadeCancelled})
			}
		}
		return a.cancelled(st, nil, nil), true
	case errors.Is(stopped, xmlpipe.ErrHalted):
		// The calls are in the conversation already: the results of those
		// answered before the halt join them, and the messages local tools
		// answered theirs with are kept after them, so that the handling
		// after the resume makes only the others (held unsettles the
		// handling these records settled).
		for _, r := range results {
			a.recordResult(st, r)
		}
		h := &heldStep{Calls: calls}
		if a.keepSends(st, h, box, sends); len(h.Sends) > 0 {
			a.recordHeldStep(st, h)
		}
		return a.held(st), true
	}
	for _, r := range results {
		a.recordResult(st, r)
	}
	if len(sends) == 0 {
		return nil, false
	}
	return xmlpipe.SendAll(sends...), true
}

// reanswer gives again the answer of a handling that recorded it and was
// interrupted before it went out (see unsentStep) — the model's text, in
// XML mode the messages to peers the text holds — as that
// handling gave it, without asking the model. Under loop control the text
// goes out with its token lines stripped, as the decision it was recorded
// for (done, or no valid token) gave it; the AEIOU session that could check
// its tokens is gone with the process, which leaves no other decision. done
// is false for an answer that did not fit the required payload, or an
// XML-mode text that only unfolded context: the message is handled as
// before.
func (a *Agent) reanswer(st *turnState, it item) (resp xmlpipe.Response, done bool) {
	text := string(it.slot.Raw)
	switch {
	case st.mode == XMLTools && len(peerElements(text, a.xmlTargets(st.md))) > 0:
		a.logger().Info("the agent's messages are recorded but never went out (the handling that wrote them was "+
			"interrupted): they are sent again", "agent", a.Name, "thread", st.md.ThreadID)
		return xmlpipe.Raw(peerElements(text, a.xmlTargets(st.md))), true
	case st.mode == XMLTools && a.curates(st) && a.xmlUnfolds(a.xmlTargets(st.md)) &&
		len(peerSpans(text, map[string]bool{unfoldElement: true})) > 0:
		return nil, false
	case a.loopControlled(st):
		a.loops.end(st.session)
		resp = a.answer(st.md, aeiou.StripTokens(text))
	default:
		out, asText := a.outputType(st)
		if out == nil {
			resp = a.answer(st.md, text)
		} else if resp, _ = a.structured(st.md, out, asText, text); resp == nil {
			return nil, false
		}
	}
	a.logger().Info("the agent's answer is recorded but never went out (the handling that gave it was "+
		"interrupted): it is given again", "agent", a.Name, "thread", st.md.ThreadID)
	return resp, true
}
