package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// mintIDs returns the calls of a reply as they are kept: each with an id no
// other call of the conversation has, that can travel as a correlation ref.
// The provider's id is kept when it qualifies (ids of servers that give
// none, minted from the call's content, repeat when the model repeats a
// call; providers refuse a conversation that uses an id twice).
func (a *Agent) mintIDs(st *turnState, calls []ToolCall) []storedCall {
	out := make([]storedCall, len(calls))
	used := func(id string) bool {
		if st.c.ids[id] {
			return true
		}
		for _, o := range out {
			if o.ID == id {
				return true
			}
		}
		return false
	}
	for i, tc := range calls {
		id := tc.ID
		if id == "" || stage.CheckRef(id) != nil || used(id) {
			seed := strconv.Itoa(len(st.c.items)) + "\x00" + strconv.Itoa(i) + "\x00" + tc.ID + "\x00" + tc.Name
			id = "call_" + nameHash(seed)
			for n := 2; used(id); n++ {
				id = "call_" + nameHash(seed+"\x00"+strconv.Itoa(n))
			}
		}
		out[i] = storedCall{ID: id, Name: tc.Name, Arguments: textArguments(tc), Extra: tc.Extra}
	}
	return out
}

// dispatch turns a reply's tool calls into messages (native mode): each call
// of a peer's function becomes a message to that peer carrying the call's
// arguments as its payload (codec.AppendJSON: presence-preserving, nothing
// coerced) and the call's id as its ref. A call that cannot be made — an
// unknown function, arguments that are not a JSON object or do not fit the
// peer's payload — is answered at once with a result saying which field and
// why, and nothing is sent for it; a local tool answers at once too (or
// sends a message of its own). It returns the messages to send and the
// results to record, in the calls' order. A call whose result is in done,
// or whose local tool's message is in sent (answered before a halt stopped
// the step: see heldStep), is not made again: that result or message is
// taken. When a halt or kill stopped a local tool (stopped: its context's
// cause), it returns the messages and results of the calls answered
// before it (kept with a halted step, not sent) — the stopped tool's
// failure is the stop's, not the call's, and is not among them.
func (a *Agent) dispatch(ctx context.Context, st *turnState, box *toolbox, raw []ToolCall,
	calls []storedCall, done map[string]resultRecord, sent map[string]*xmlpipe.SendResponse) (sends []*xmlpipe.SendResponse,
	results []resultRecord, stopped error) {
	fail := func(call storedCall, format string, args ...any) {
		results = append(results, resultRecord{ID: call.ID, Name: call.Name, IsError: true, Content: fmt.Sprintf(format, args...)})
	}
	limit := cmpOr(a.MaxCallsPerTurn, DefaultMaxCallsPerTurn)
	made := map[string]string{} // a Once tool's call (sameCall) → the id of the one made
	for i, call := range calls {
		bt := box.byFunc[call.Name]
		key := "" // set for a call of a Once tool
		if bt != nil && bt.local != nil && bt.local.Once {
			key = sameCall(call)
		}
		if r, ok := done[call.ID]; ok {
			if key != "" && made[key] == "" {
				made[key] = call.ID // made before a restart
			}
			results = append(results, r)
			continue
		}
		if s, ok := sent[call.ID]; ok {
			if key != "" && made[key] == "" {
				made[key] = call.ID
			}
			sends = append(sends, s)
			continue
		}
		switch {
		case len(sends) >= limit && (bt == nil || bt.local == nil):
			fail(call, "Not sent: at most %d calls of one reply are made. Make this call again once the others "+
				"have their results.", limit)
		case bt == nil:
			fail(call, "There is no function %q: nothing was done. The functions are: %s.", call.Name, box.names())
		case raw[i].Err != nil:
			fail(call, "%sThe arguments of %s are not a JSON object (%v): nothing was done. Call it again with a JSON "+
				"object that matches its parameters.", st.cutNote, call.Name, raw[i].Err)
		case key != "" && made[key] != "":
			results = append(results, resultRecord{ID: call.ID, Name: call.Name, Content: fmt.Sprintf("The same "+
				"call as %s in this reply: it was made once, and the result of %s answers both.", made[key], made[key])})
		case bt.local != nil:
			if key != "" {
				made[key] = call.ID
			}
			s, r, err := a.callLocal(ctx, st, bt.local, call)
			switch {
			case err != nil:
				return sends, results, err
			case s != nil:
				sends = append(sends, s)
			default:
				results = append(results, r)
			}
		default:
			xml, err := codec.AppendJSON(nil, bt.peer.Payload.Model(), []byte(call.Arguments), codec.JSONOptions{EmptyNS: true})
			if err != nil {
				fail(call, "Invalid arguments for %s: %v. Nothing was sent; call it again with arguments that match "+
					"its parameters.", call.Name, err)
				continue
			}
			sends = append(sends, xmlpipe.SendRef(bt.peer.Name, &xmlpipe.Encoded{Type: bt.peer.Payload, XML: xml}, call.ID))
		}
	}
	return sends, results, nil
}

// sameCall is the key under which identical calls are one: the function's
// name and its arguments as a JSON value (keys sorted, spacing dropped),
// or as written when they are not JSON.
func sameCall(call storedCall) string {
	var v any
	if err := json.Unmarshal([]byte(call.Arguments), &v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			return call.Name + "\x00" + string(b)
		}
	}
	return call.Name + "\x00" + call.Arguments
}

// callLocal runs a local tool's call: it returns the message the tool
// sends (bound to the call), else the call's result. A tool that fails
// because an operator's halt, a kill or a cancel cancelled ctx returns the
// cancellation's cause as stopped, and no result.
func (a *Agent) callLocal(ctx context.Context, st *turnState, lt *LocalTool,
	call storedCall) (send *xmlpipe.SendResponse, result resultRecord, stopped error) {
	result = resultRecord{ID: call.ID, Name: call.Name}
	if lt.Call == nil {
		result.Content, result.IsError = call.Name+" is not available.", true
		return nil, result, nil
	}
	res, err := lt.Call(ctx, LocalCall{Agent: a.Name, Thread: st.session, ID: call.ID,
		Arguments: json.RawMessage(call.Arguments), Metadata: st.md})
	switch cause := context.Cause(ctx); {
	case err != nil && (errors.Is(cause, xmlpipe.ErrHalted) || errors.Is(cause, xmlpipe.ErrConversationKilled) ||
		errors.Is(cause, xmlpipe.ErrCancelled)):
		return nil, resultRecord{}, cause
	case err != nil:
		result.Content, result.IsError = fmt.Sprintf("%s failed: %v", call.Name, err), true
	case res.Send != nil:
		s := *res.Send
		s.Ref = call.ID
		return &s, resultRecord{}, nil
	default:
		result.Content, result.IsError = res.Content, res.IsError
	}
	return nil, result, nil
}

// request builds the model request of one iteration: the constitution, the
// agent's prompt, what it may call (native: the functions, listed by name;
// XML: the peers' schemas), the history — curated by the librarian, or
// fitted to the context window — and the structured output wanted.
func (a *Agent) request(ctx context.Context, st *turnState, box *toolbox, out *xmlpipe.PayloadType) Request {
	md := st.md
	sys := []Message{{Role: System, Content: a.constitution()}}
	if a.Prompt != "" {
		sys = append(sys, Message{Role: System, Content: a.Prompt})
	}
	if note := a.expiredNote(st); note != "" {
		sys = append(sys, Message{Role: System, Content: note})
	}
	var tools []ToolSpec
	switch {
	case st.mode == NativeTools && len(box.specs) > 0:
		tools = box.specs
		sys = append(sys, Message{Role: System, Content: "Your tools (call them as functions; each call is answered " +
			"with its result): " + box.names() + "."})
	case st.mode == XMLTools && md.UsageInstructions != "":
		sys = append(sys, Message{Role: System, Content: md.UsageInstructions + "\n\n" + xmlModeNote})
	}
	if st.mode == XMLTools && a.curates(st) && a.xmlUnfolds(a.xmlTargets(md)) {
		sys = append(sys, Message{Role: System, Content: xmlUnfoldNote})
	}
	if a.loopControlled(st) {
		sys = append(sys, Message{Role: System, Content: aeiou.Rules})
	}
	var tail []Message
	if md.TodoNudge != "" {
		tail = append(tail, Message{Role: User, Content: md.TodoNudge})
	}
	req := Request{Model: a.Model, MaxTokens: a.MaxTokens, Temperature: a.Temperature, Tools: tools,
		Agent: a.Name, Thread: st.session}
	switch {
	case out != nil && (st.mode == NativeTools || len(md.Peers) == 0):
		req.Output = &OutputSchema{Name: funcName(out.Name()), Schema: schemaOf(out),
			Description: "The answer to the caller."}
		if box != nil && box.byFunc[req.Output.Name] != nil { // a function's name: the output's must differ
			req.Output.Name = withHash(req.Output.Name, "output")
		}
	case out != nil:
		// XML mode with peers: the reply must stay free to carry their
		// payloads, so the answer's format is asked for in words.
		sys = append(sys, Message{Role: System, Content: "When you answer your caller, answer with only a JSON " +
			"object matching this JSON Schema: " + string(schemaOf(out))})
	}
	if a.curates(st) {
		req.Messages = a.curate(ctx, st, sys, tail, tools, req.Output)
		return req
	}
	var omitted int
	req.Messages, omitted = fitUnits(sys, a.unitsBack(st.c, tail), st.c.msgs+len(tail), tools, req.Output,
		a.contextWindow(st.traits), a.MaxTokens)
	if omitted > 0 {
		a.logger().Info("agent history trimmed to the context window", "agent", a.Name, "thread", st.session,
			"omitted", omitted)
	}
	return req
}

// errorText words a <huh> or SystemError: its text and the pump's detail,
// never the base64 of the original attempt.
func errorText(de *xmlpipe.DeliveryError) string {
	var base string
	switch {
	case de.Refusal != nil:
		return de.Refusal.Summary()
	case de.Huh != nil:
		base = de.Huh.Error
	case de.System != nil:
		base = de.System.Message
	}
	if de.Detail != "" {
		if base == "" {
			return de.Detail
		}
		return base + ": " + de.Detail
	}
	if base == "" {
		return "the message failed"
	}
	return base
}

// errorFeedback is the note a <huh> or SystemError not bound to a call
// becomes: who said it, what and — in XML mode — whom the agent may
// address.
func (a *Agent) errorFeedback(st *turnState, de *xmlpipe.DeliveryError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[From %s] Your message was not accepted: %s.", st.md.From, strings.TrimSuffix(errorText(de), "."))
	if st.mode == XMLTools {
		b.WriteString(" " + a.peersNote(st.md))
	}
	return b.String()
}

// mustJSON marshals v, which cannot fail for the records it is used for.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llm: marshal %T: %v", v, err))
	}
	return b
}
