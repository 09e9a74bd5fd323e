package llm

import (
	"encoding/json"
	"errors"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// heldStepType records a step an operator's halt stopped while its local
// tools ran (Raw: a heldStep in JSON): the model's reply and the results
// of the calls answered before the halt. It is not part of the
// conversation the model reads — the halt leaves no trace there — but the
// handling of the same message after the resume takes the step up from it:
// the model is not asked again, and only the calls without a result are
// made. Any later slot of the conversation's voids it.
const heldStepType = "llm.held-step"

// heldStep is a step a halt stopped during its local tools, as kept.
type heldStep struct {
	// Content and Calls are the model's reply: its text and its calls, with
	// the ids they were given.
	Content string       `json:"content,omitempty"`
	Calls   []storedCall `json:"calls"`
	// BadArgs holds, by call id, why a call's arguments are not a JSON
	// object (ToolCall.Err).
	BadArgs map[string]string `json:"bad_args,omitempty"`
	// CutNote begins the result of a call whose arguments the token limit
	// broke (turnState.cutNote).
	CutNote string `json:"cut_note,omitempty"`
	// Results are the calls answered before the halt: local tools that ran
	// to the end, calls that could not be made.
	Results []resultRecord `json:"results,omitempty"`
}

// readHeldStep decodes a held step's slot (nil when it does not decode).
func readHeldStep(s *registry.Slot) *heldStep {
	h := &heldStep{}
	if json.Unmarshal(s.Raw, h) != nil || len(h.Calls) == 0 {
		return nil
	}
	return h
}

// newHeldStep is the held step of a reply whose calls (raw as the model
// wrote them, calls as kept) were stopped by a halt once results were in.
func newHeldStep(content string, raw []ToolCall, calls []storedCall, cutNote string, results []resultRecord) *heldStep {
	h := &heldStep{Content: content, Calls: calls, CutNote: cutNote, Results: results}
	for i, tc := range raw {
		if tc.Err != nil {
			if h.BadArgs == nil {
				h.BadArgs = map[string]string{}
			}
			h.BadArgs[calls[i].ID] = tc.Err.Error()
		}
	}
	return h
}

// toolCalls returns the held calls as the model wrote them, for dispatch.
func (h *heldStep) toolCalls() []ToolCall {
	raw := make([]ToolCall, len(h.Calls))
	for i, c := range h.Calls {
		raw[i] = ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)}
		if msg, ok := h.BadArgs[c.ID]; ok {
			raw[i].Err = errors.New(msg)
		}
	}
	return raw
}

// done returns the held results by call id.
func (h *heldStep) done() map[string]resultRecord {
	m := make(map[string]resultRecord, len(h.Results))
	for _, r := range h.Results {
		m[r.ID] = r
	}
	return m
}

// recordHeldStep keeps a step a halt stopped during its local tools (see
// heldStepType). It does not settle the handling: the pump still drops what
// it returns and hands the message again after the resume.
func (a *Agent) recordHeldStep(st *turnState, h *heldStep) {
	s := registry.Slot{ThreadID: st.session, From: a.Name, OwnName: a.Name, PayloadType: heldStepType, Raw: mustJSON(h)}
	stored, err := a.History.AppendShared(s)
	if err != nil {
		a.logger().Warn("halted step not kept: it is made again, model call and tools, after the resume",
			"agent", a.Name, "thread", st.session, "error", err)
		return
	}
	st.c.add(a, &stored)
}
