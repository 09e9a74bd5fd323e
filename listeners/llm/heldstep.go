package llm

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// heldStepType records a step an operator's halt stopped while its local
// tools ran (Raw: a heldStep in JSON): the model's reply and the results
// of the calls answered before the halt, or the messages local tools
// answered them with. It is not part of the
// conversation the model reads — the halt leaves no trace there — but the
// handling of the same message after the resume takes the step up from it:
// the model is not asked again, and only the calls without a result are
// made. A re-send of calls already in the conversation (resend) that a
// halt stopped keeps only its local tools' messages in one, which the
// re-send after the resume sends instead of running those tools again.
// Any later slot of the conversation's voids it.
const heldStepType = "llm.held-step"

// heldStep is a step a halt stopped during its local tools, as kept.
type heldStep struct {
	// Content and Calls are the model's reply: its text and its calls, with
	// the ids they were given.
	Content string       `json:"content,omitempty"`
	Calls   []storedCall `json:"calls"`
	// Reasoning is the reply's Reply.Reasoning (callsRecord.Reasoning).
	Reasoning json.RawMessage `json:"reasoning,omitempty"`
	// BadArgs holds, by call id, why a call's arguments are not a JSON
	// object (ToolCall.Err).
	BadArgs map[string]string `json:"bad_args,omitempty"`
	// CutNote begins the result of a call whose arguments the token limit
	// broke (turnState.cutNote).
	CutNote string `json:"cut_note,omitempty"`
	// Results are the calls answered before the halt: local tools that ran
	// to the end, calls that could not be made.
	Results []resultRecord `json:"results,omitempty"`
	// Sends are the messages local tools answered their calls with before
	// the halt (LocalResult.Send: the route tool's filled request, …),
	// sent as they were after the resume instead of running the tool again.
	Sends []heldSend `json:"sends,omitempty"`
}

// heldSend is a message a local tool answered a held call with, as kept:
// its target and its payload element, whose root (name and namespace)
// names the payload type it is sent in again.
type heldSend struct {
	// ID is the call's id (the message's ref).
	ID string `json:"id"`
	To string `json:"to"`
	// Root and NS are the payload root's name and namespace.
	Root string `json:"root"`
	NS   string `json:"ns,omitempty"`
	// XML is the payload element.
	XML string `json:"xml"`
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

// keepSends adds to h the messages of sends that local tools of box
// answered calls of h with. A message whose payload cannot be encoded
// here is not kept: its call is made again after the resume.
func (a *Agent) keepSends(st *turnState, h *heldStep, box *toolbox, sends []*xmlpipe.SendResponse) {
	local := make(map[string]bool, len(h.Calls))
	for _, c := range h.Calls {
		if bt := box.byFunc[c.Name]; bt != nil && bt.local != nil {
			local[c.ID] = true
		}
	}
	for _, s := range sends {
		if !local[s.Ref] {
			continue // a peer's call: made again from its arguments
		}
		pt, xml, err := a.encodeSend(st, s)
		if err != nil {
			a.logger().Warn("a local tool's message is not kept with the halted step: its call is made again after "+
				"the resume", "agent", a.Name, "thread", st.session, "call", s.Ref, "to", s.To, "error", err)
			continue
		}
		h.Sends = append(h.Sends, heldSend{ID: s.Ref, To: s.To, Root: pt.Name(), NS: pt.Namespace(), XML: string(xml)})
	}
}

// encodeSend returns the payload type and element of a local tool's
// message: an *xmlpipe.Encoded payload as written, else the value encoded
// in its target's payload type.
func (a *Agent) encodeSend(st *turnState, s *xmlpipe.SendResponse) (*xmlpipe.PayloadType, []byte, error) {
	if e, ok := s.Payload.(*xmlpipe.Encoded); ok {
		if e == nil || e.Type == nil || len(e.XML) == 0 {
			return nil, nil, errors.New("an encoded payload without its type or XML")
		}
		return e.Type, e.XML, nil
	}
	pt := a.targetType(st, s.To)
	if pt == nil {
		return nil, nil, fmt.Errorf("no payload type known for %s", s.To)
	}
	xml, err := pt.AppendPayload(nil, s.Payload)
	if err != nil {
		return nil, nil, err
	}
	return pt, xml, nil
}

// targetType returns the payload type of listener name: a peer's of
// the handling, else a registered listener's (Lookup); nil when unknown.
func (a *Agent) targetType(st *turnState, name string) *xmlpipe.PayloadType {
	for _, p := range st.md.Peers {
		if p.Name == name && p.Payload != nil {
			return p.Payload
		}
	}
	if a.Lookup != nil {
		if pt, ok := a.Lookup(name); ok {
			return pt
		}
	}
	return nil
}

// sent returns the kept messages by call id, ready to send again. One
// whose target no longer takes its payload's root is left out: its call
// is made again.
func (a *Agent) sent(st *turnState, h *heldStep) map[string]*xmlpipe.SendResponse {
	if len(h.Sends) == 0 {
		return nil
	}
	m := make(map[string]*xmlpipe.SendResponse, len(h.Sends))
	for _, s := range h.Sends {
		pt := a.targetType(st, s.To)
		if pt == nil || !pt.Matches(s.Root, s.NS) {
			a.logger().Warn("a kept message of the halted step is not sent again: its target no longer takes "+
				"its payload; its call is made again", "agent", a.Name, "thread", st.session, "call", s.ID,
				"to", s.To, "root", s.Root)
			continue
		}
		m[s.ID] = xmlpipe.SendRef(s.To, &xmlpipe.Encoded{Type: pt, XML: []byte(s.XML)}, s.ID)
	}
	return m
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
	s := registry.Slot{ThreadID: st.session, From: a.Name, OwnName: a.Name, PayloadType: heldStepType, Raw: mustJSON(h),
		Seq: st.seq}
	stored, err := a.History.AppendShared(s)
	if err != nil {
		a.logger().Warn("halted step not kept: it is made again, model call and tools, after the resume",
			"agent", a.Name, "thread", st.session, "error", err)
		return
	}
	st.c.add(a, &stored)
}
