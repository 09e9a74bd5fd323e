package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// unsentCalls returns the calls waiting for a result that were recorded
// after every message the agent received, so no message reached it since:
// the handling that recorded them is the one under way again. The pump
// records a message in the history before its handler runs, save when it
// hands the same message again — after a crash (recovery re-delivers a
// message only when nothing the agent sent in its conversation after it is
// journaled), an immediate shutdown or an abandoned handler. So these calls
// were recorded, but their messages never went out. nil when there are
// none, or another message came after them (the calls went out; their
// answers are awaited).
func (c *convo) unsentCalls() []storedCall {
	if len(c.pending) == 0 {
		return nil
	}
	for i := len(c.items) - 1; i >= 0; i-- {
		switch c.items[i].kind {
		case itemCalls:
			return slices.Clone(c.pending)
		case itemResult, itemFeedback:
		default:
			return nil
		}
	}
	return nil
}

// resend makes again the calls of a handling that recorded them and was
// interrupted before their messages went out (see unsentCalls), exactly as
// recorded: the same ids (the answers' refs), functions and arguments, so
// the conversation goes on as if the interruption had not happened, the
// model not asked again. A call that cannot be made now (its peer is gone
// since) is answered at once, as dispatch does. It returns the messages to
// send, or done false when every call was answered here and the model is
// asked next.
func (a *Agent) resend(ctx context.Context, st *turnState, calls []storedCall) (resp xmlpipe.Response, done bool) {
	a.logger().Info("the agent's calls are recorded but their messages never went out (the handling that made "+
		"them was interrupted): they are sent again", "agent", a.Name, "thread", st.md.ThreadID, "calls", len(calls))
	raw := make([]ToolCall, len(calls))
	for i, c := range calls {
		raw[i] = ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)}
	}
	sends, results, stopped := a.dispatch(ctx, st, a.toolbox(st.md.Peers), raw, calls, nil)
	switch {
	case errors.Is(stopped, xmlpipe.ErrConversationKilled):
		return a.killed(st), true
	case errors.Is(stopped, xmlpipe.ErrHalted):
		// The calls are in the conversation already: the results of those
		// answered before the halt join them, so that the handling after
		// the resume makes only the others (held unsettles the handling
		// these records settled).
		for _, r := range results {
			a.recordResult(st, r)
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

// unsentAnswer returns the agent's answer — its model's text, or the
// reason it halted the turn — when that is the latest item of the
// conversation, so no message reached the agent since: the handling that
// recorded it is the one under way again (see unsentCalls), and the answer
// never went out.
func (c *convo) unsentAnswer() (it item, ok bool) {
	if n := len(c.items); n > 0 {
		if it = c.items[n-1]; it.kind == itemReply || it.kind == itemHalt {
			return it, true
		}
	}
	return item{}, false
}

// reanswer gives again the answer of a handling that recorded it and was
// interrupted before it went out (see unsentAnswer), as that handling gave
// it, without asking the model. done is false for an answer it cannot give
// again as it was (one decided by loop control's tokens, or one that did
// not fit the required payload): the message is handled as before.
func (a *Agent) reanswer(st *turnState, it item) (resp xmlpipe.Response, done bool) {
	text := string(it.slot.Raw)
	switch {
	case it.kind == itemHalt:
		resp = a.answer(st.md, fmt.Sprintf("[%s halted: %s]", a.Name, text))
	case a.loopControlled(st):
		return nil, false
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
