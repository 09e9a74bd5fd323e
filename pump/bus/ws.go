package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// splitTarget splits the reference's `@target text` (its TARGET_PATTERN,
// DOTALL: `^@(\S+)\s+(.+)$` with RE2's ASCII \s) into the target and the
// text, without a regexp (FuzzSplitTarget holds it to the pattern).
func splitTarget(raw string) (target, text string, ok bool) {
	if len(raw) < 2 || raw[0] != '@' {
		return "", "", false
	}
	rest := raw[1:]
	i := 0
	for i < len(rest) && !isRE2Space(rest[i]) {
		i++
	}
	if i == 0 || i == len(rest) {
		return "", "", false // no target, or nothing after it
	}
	j := i
	for j < len(rest) && isRE2Space(rest[j]) {
		j++
	}
	if j == len(rest) {
		// Only spaces follow: the pattern's greedy \s+ gives back one of
		// them to (.+), when there are two or more.
		if j-i < 2 {
			return "", "", false
		}
		return rest[:i], rest[j-1:], true
	}
	return rest[:i], rest[j:], true
}

// isRE2Space reports whether c is in RE2's \s: [\t\n\f\r ].
func isRE2Space(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// Senders of /ws messages, as the reference builds from_id: source:user.
const (
	sourceConsole   = "console"   // send with raw "@target text"
	sourceWebSocket = "websocket" // send with target + content
)

// wsSocket is one /ws client: the JSON protocol and the events of the
// conversations it started.
type wsSocket struct {
	s *Server
	c *conn

	// subs are the event types the client subscribed to (all until it
	// sends a subscribe request).
	subs *subscription

	// frame is the writer goroutine's encoding buffer (encode).
	frame []byte

	// details is whether the socket's user is told the details of
	// failures (seesFailureDetail), fixed with its session.
	details bool

	// fromConsole and fromWebSocket are the from ids of the socket's sends,
	// source:user, by source (built once each: the read loop's own).
	fromConsole, fromWebSocket string

	mu   sync.Mutex
	held map[string][]any // conversation → events waiting for its "sent"
	// shown is the text the socket's delta frames carried per agent's
	// stream, which a reply or output frame repeating it marks streamed.
	shown shownStreams
}

// handleWS is GET /ws (behind the bearer middleware).
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r.Context())
	sock := &wsSocket{s: s, subs: newSubscription(), held: map[string][]any{}, details: seesFailureDetail(sess)}
	if sock.c = s.openConn(w, r, "ws", sess, sock.encode); sock.c == nil {
		return
	}
	defer sock.c.finish()
	sock.c.reuseReads = true // handle copies what it keeps of a frame
	defer s.router.forget(sock)
	s.wsocks.add(sock)
	defer s.wsocks.remove(sock)
	sess = sock.c.sess
	sock.c.send(wire.Connected{Head: wire.Head{Type: wire.TypeConnected}, Username: sess.Username,
		Role: string(sess.Role)})
	sock.c.serve(sock.handle)
}

// handle answers one client frame.
func (w *wsSocket) handle(data []byte) {
	req, err := decodeRequest(data)
	if err != nil || req.Type == "" {
		if t, ok := nonStringType(data); ok {
			// {"type":5}, {"type":null}: valid JSON whose type no case
			// has, as the reference answers it.
			w.fail(req.Head, wire.CodeBadRequest, "Unknown message type: "+t)
			return
		}
	}
	if err != nil {
		w.fail(req.Head, wire.CodeBadRequest, jsonErrorText(err))
		return
	}
	ctx := w.c.ctx
	reply := wire.Head{Type: req.Type, ID: req.ID}
	switch req.Type {
	case wire.TypePing:
		w.c.send(wire.Head{Type: wire.TypePong, ID: req.ID})
	case wire.TypeStatus:
		st, err := w.s.opts.Console.Status(ctx)
		if err != nil {
			w.internal(reply, err)
			return
		}
		out := wire.Status{Head: reply, Threads: st.Threads, IdleThreads: st.Idle, Organism: st.Organism,
			UptimeSeconds: st.Uptime.Seconds(), Listeners: st.Listeners, Slots: st.Slots, Processed: st.Processed,
			Failed: st.Failed, InFlight: st.InFlight, Gateways: st.Gateways, Halted: st.Halted,
			HaltedListeners: st.HaltedListeners}
		if sess := w.c.sess; sess.Profile != "" { // scoped to what the profile sees (profile_scope.go)
			out.Threads, out.IdleThreads = w.s.threadCounts(sess)
			out.Listeners, out.Profile = w.s.visibleListeners(sess), sess.Profile
			out.Slots, out.Processed, out.Failed, out.InFlight, out.Gateways = 0, 0, 0, 0, nil
			out.HaltedListeners = nil
		}
		w.c.send(out)
	case wire.TypeListeners, wire.TypeTargets:
		ls, err := w.s.opts.Console.Listeners(ctx)
		if err != nil {
			w.internal(reply, err)
			return
		}
		out := wire.Listeners{Head: wire.Head{Type: wire.TypeListeners, ID: req.ID}, Listeners: []string{},
			Details: []wire.Listener{}}
		for _, l := range ls {
			if !w.s.visible(w.c.sess, l.Name) {
				continue // outside the user's profile: it does not exist for them
			}
			out.Listeners = append(out.Listeners, l.Name)
			out.Details = append(out.Details, wire.Listener{Name: l.Name, Description: l.Description, Agent: l.Agent,
				Broadcast: l.Broadcast, RootTag: l.RootTag})
		}
		w.c.send(out)
	case wire.TypeThreads:
		ts, err := w.s.opts.Console.Threads(ctx)
		if err != nil {
			w.internal(reply, err)
			return
		}
		out := wire.Threads{Head: reply, Threads: []wire.Thread{}}
		visible := w.s.historyView(w.c.sess)
		for _, t := range ts {
			if !visible(t.ID, w.s.conversationOf(t.ID), t.LastFrom, t.LastTo) {
				continue
			}
			out.Threads = append(out.Threads, wire.Thread{ID: t.ID, Ended: t.Ended, Depth: t.Depth, Slots: t.Slots,
				IdleSeconds: t.Idle.Seconds(), LastFrom: t.LastFrom, LastTo: t.LastTo})
		}
		w.c.send(out)
	case wire.TypeMonitor:
		if strings.TrimSpace(req.Prefix) == "" {
			w.fail(reply, wire.CodeBadRequest, "Missing prefix")
			return
		}
		hs, err := w.s.opts.Console.Monitor(ctx, strings.TrimSpace(req.Prefix))
		if err != nil {
			w.internal(reply, err)
			return
		}
		out := wire.Monitor{Head: reply, Prefix: req.Prefix, Threads: []wire.History{}}
		memory, visible := w.s.memoryReader(w.c.sess), w.s.historyView(w.c.sess)
		for _, h := range hs {
			names := make([]string, 0, 2*len(h.Slots))
			for _, sl := range h.Slots {
				names = append(names, sl.From, sl.To)
			}
			if !visible(h.ID, w.s.conversationOf(h.ID), names...) {
				continue
			}
			wh := wire.History{ID: h.ID, Slots: []wire.Slot{}}
			payloads := memory.historyPayloads(w.s.conversationOf(h.ID), h)
			for i, sl := range h.Slots {
				wh.Slots = append(wh.Slots, wire.Slot{From: sl.From, To: sl.To, PayloadType: sl.PayloadType,
					Payload: payloads[i], Timestamp: stamp(sl.Time)})
			}
			out.Threads = append(out.Threads, wh)
		}
		w.c.send(out)
	case wire.TypeSend:
		w.send(req)
	case wire.TypeUsage:
		w.usage(reply)
	case wire.TypeSubscribe:
		set, bad := parseEvents(req.Events)
		if bad != "" {
			w.fail(reply, wire.CodeBadRequest, "Unknown event type: "+bad)
			return
		}
		w.subs.replace(set)
		w.c.send(wire.Subscribed{Head: wire.Head{Type: wire.TypeSubscribed, ID: req.ID}, Events: set.names()})
	default:
		w.fail(reply, wire.CodeBadRequest, "Unknown message type: "+req.Type)
	}
}

// nonStringType returns the JSON text of a frame's "type" when the frame
// is a JSON object whose type is present but no string (5, null, [..]);
// the error path only.
func nonStringType(data []byte) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return "", false
	}
	raw, ok := m["type"]
	if !ok || len(raw) == 0 || raw[0] == '"' {
		return "", false
	}
	return string(raw), true
}

// fail sends an error frame answering the request with head h.
func (w *wsSocket) fail(h wire.Head, code, msg string) {
	w.c.send(wire.Error{Head: wire.Head{Type: wire.TypeError, ID: h.ID}, Error: msg, Code: code})
}

func (w *wsSocket) internal(h wire.Head, err error) {
	w.c.log.Error("request failed", "type", h.Type, "error", err)
	w.fail(h, wire.CodeInternal, "Internal error")
}

// send is the "send" command: build the target's payload from the text the
// way the console does (or take a structured payload as the REST inject
// does), inject it on a new conversation — or, with a thread_id, on that
// conversation of the user's, which continues — answer "sent", then stream
// the conversation's events.
func (w *wsSocket) send(req wire.Request) {
	h := wire.Head{Type: wire.TypeSend, ID: req.ID}
	if !w.c.sess.Role.Allows(auth.Operator) {
		w.fail(h, wire.CodeForbidden, fmt.Sprintf("Forbidden: role %s cannot send", w.c.sess.Role))
		return
	}
	var target, text, source string
	payload := req.Payload
	if req.Raw != "" {
		raw := strings.TrimSpace(req.Raw)
		if raw == "" {
			w.fail(h, wire.CodeBadRequest, "Empty message")
			return
		}
		t, rest, ok := splitTarget(raw)
		if !ok {
			w.fail(h, wire.CodeBadRequest, "No target specified. Use @target message format.")
			return
		}
		target, text, source = t, strings.TrimSpace(rest), sourceConsole
		payload = nil
	} else {
		target, text, source = strings.TrimSpace(req.Target), req.Body(), sourceWebSocket
		if target == "" {
			w.fail(h, wire.CodeBadRequest, "Missing target")
			return
		}
		if text == "" && len(payload) == 0 {
			w.fail(h, wire.CodeBadRequest, "Missing content")
			return
		}
	}
	l, ok := w.s.pump.Lookup(target)
	if !ok || !w.s.visible(w.c.sess, target) {
		w.fail(h, wire.CodeUnknownTarget, w.unknownTarget(target))
		return
	}
	who := pump.Principal{From: w.sender(source), User: w.c.sess.Username, Profile: w.c.sess.Profile}
	thread := strings.TrimSpace(req.ThreadID)
	if thread != "" && !stage.IsThreadID(thread) {
		w.fail(h, wire.CodeBadRequest, "Invalid thread_id: want a lower-case UUID")
		return
	}
	if err := w.s.refusingEarly(who, l.Name, thread); err != nil {
		// The organism is refusing messages for l now: answered before
		// anything of this one is built or parsed (see refusingEarly).
		w.injectFailed(h, err)
		return
	}
	if source == sourceConsole {
		// "@target {json}" and "@target <Payload>…" carry the payload's
		// fields, as on the console's line.
		p, structured, err := organism.StructuredPayload(text)
		if err != nil {
			w.fail(h, wire.CodeBadPayload, "Invalid JSON payload: "+err.Error())
			return
		}
		if structured {
			payload = p
		}
	}
	var body []byte
	if len(payload) > 0 {
		// A structured payload, as POST /api/v1/inject takes it.
		b, apiErr := w.s.payloadBytes(l, payload)
		if apiErr != nil {
			w.fail(h, wire.CodeBadPayload, apiErr.body.Error)
			return
		}
		body = b
	} else {
		v, err := organism.NewPayload(l.Payload.GoType(), text)
		if err != nil {
			w.fail(h, wire.CodeNoTextField, "Cannot create payload for "+l.Name)
			return
		}
		if body, err = l.Payload.AppendPayload(nil, v); err != nil {
			w.internal(h, err)
			return
		}
	}
	if thread == "" {
		thread, who.FreshThread = stage.NewThreadID(), true
	}
	env := pump.Envelope{From: who.From, To: l.Name, Thread: thread, Payload: body, As: &who}
	if err := w.s.pump.CheckThread(who, thread); err != nil {
		// Another party's conversation: its events are never routed here;
		// the pump refuses the message (a security event), the thread
		// untouched.
		_, err = w.s.pump.SendEnvelope(w.c.ctx, env, nil)
		w.injectFailed(h, err)
		return
	}
	// A continued conversation's events go to the socket from now on; its
	// id is its root thread's (the thread itself when it has ended).
	conv := w.s.conversationOf(thread)
	w.hold(conv)
	w.s.router.claim(conv, w)
	_, err := w.s.pump.SendEnvelope(w.c.ctx, env, nil)
	w.s.router.settle(conv, err == nil)
	if err != nil {
		w.unhold(conv)
		w.injectFailed(h, err)
		return
	}
	w.release(conv, wire.Sent{Head: wire.Head{Type: wire.TypeSent, ID: req.ID}, ThreadID: conv, Target: l.Name})
}

// unknownTarget is the reference's refusal of a send to target, which no
// listener the session sees has: "Unknown target: X. Available: ['a', 'b']"
// — the names the listeners command answers, as a Python list.
func (w *wsSocket) unknownTarget(target string) string {
	msg := "Unknown target: " + target
	ls, err := w.s.opts.Console.Listeners(w.c.ctx)
	if err != nil {
		return msg
	}
	var b strings.Builder
	for _, l := range ls {
		if !w.s.visible(w.c.sess, l.Name) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + l.Name + "'")
	}
	return msg + ". Available: [" + b.String() + "]"
}

// sender is the from id of the socket's sends from source (sourceConsole
// or sourceWebSocket): source:user.
func (w *wsSocket) sender(source string) string {
	from := &w.fromWebSocket
	if source == sourceConsole {
		from = &w.fromConsole
	}
	if *from == "" {
		*from = source + ":" + w.c.sess.Username
	}
	return *from
}

// injectFailed answers a send the organism refused or could not take.
func (w *wsSocket) injectFailed(h wire.Head, err error) {
	e, ok := wsInjectError(h, err)
	switch {
	case !ok: // the socket is closing
	case e.Code == wire.CodeInternal:
		w.internal(h, err)
	default:
		if errors.Is(err, pump.ErrNotDurable) {
			w.c.log.Error("send failed: the journal could not record the message", "error", err)
		}
		w.c.send(e)
	}
}

// wsInjectError is the error frame answering a send the pump did not take
// with err, as the REST inject answers it (injectError); false when no
// frame is due (the socket is closing).
func wsInjectError(h wire.Head, err error) (wire.Error, bool) {
	head := wire.Head{Type: wire.TypeError, ID: h.ID}
	if errors.Is(err, pump.ErrContinueKilled) {
		return wire.Error{Head: head, Error: failure.HuhKilled, Code: wire.CodeKilled}, true
	}
	if f, ok := errors.AsType[*failure.Failure](err); ok {
		return wire.Error{Head: head, Error: f.Canned(), Code: wire.CodeRejected, Diagnostics: diagnosticsOf(f)}, true
	}
	if text, retry, ok := busyOf(err); ok {
		return wire.Error{Head: head, Error: text, Code: wire.CodeBusy, RetryAfter: retry}, true
	}
	if text, retry, ok := storageRefusalOf(err); ok {
		return wire.Error{Head: head, Error: text, Code: wire.CodeUnavailable, RetryAfter: retry}, true
	}
	switch {
	case errors.Is(err, pump.ErrClosed), errors.Is(err, pump.ErrNotStarted):
		return wire.Error{Head: head, Error: "Pipeline not available", Code: wire.CodeUnavailable}, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wire.Error{}, false
	case errors.Is(err, pump.ErrNotDurable):
		return wire.Error{Head: head, Error: notJournaledText, Code: wire.CodeUnavailable}, true
	}
	return wire.Error{Head: head, Error: "Internal error", Code: wire.CodeInternal}, true
}

// hold starts keeping conv's events until its "sent" frame is queued.
func (w *wsSocket) hold(conv string) {
	w.mu.Lock()
	w.held[conv] = nil
	w.mu.Unlock()
}

// unhold forgets conv's held events (the send failed).
func (w *wsSocket) unhold(conv string) {
	w.mu.Lock()
	delete(w.held, conv)
	w.shown.forget(conv)
	w.mu.Unlock()
}

// release queues sent, then the events held for conv, in order.
func (w *wsSocket) release(conv string, sent wire.Sent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.c.send(sent) {
		delete(w.held, conv)
		return
	}
	for _, item := range w.held[conv] {
		if d, ok := item.(*pendingDelta); ok {
			if !w.c.queueDelta(d) {
				break
			}
			continue
		}
		if !w.c.send(item) {
			break
		}
	}
	delete(w.held, conv)
}

// post queues an event of conv, or holds it until conv's "sent".
func (w *wsSocket) post(conv string, item any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q, ok := w.held[conv]; ok {
		if len(q) >= cap(w.c.out) {
			w.c.tooSlow()
			return
		}
		w.held[conv] = append(q, item)
		return
	}
	w.c.send(item)
}

// conversationEvent implements sink: the events the client subscribed to
// are queued (or held until the conversation's "sent"). A reply whose text
// the socket's delta frames already carried goes as a streamedReply.
func (w *wsSocket) conversationEvent(e pump.Event) {
	switch e.Kind {
	case pump.EventReply:
		w.mu.Lock()
		text, _ := organism.PayloadText(e.Payload)
		streamed := w.shown.take(e.Conversation, e.From, text)
		w.mu.Unlock()
		if streamed && w.subs.wants(wire.TypeReply) {
			w.post(e.Conversation, streamedReply{e})
			return
		}
	case pump.EventComplete:
		w.mu.Lock()
		w.shown.forget(e.Conversation)
		w.mu.Unlock()
	}
	if typ := eventType(e.Kind); typ != "" && w.subs.wants(typ) {
		w.post(e.Conversation, e)
	}
}

// streamedReply is a reply event whose text the socket's delta frames
// already carried: its frame says "streamed": true.
type streamedReply struct{ pump.Event }

// streamedOutput is an agent's interim text the socket's delta frames
// already carried: its frame says "streamed": true.
type streamedOutput struct{ organism.Output }

// eventType is the /ws frame type of a pump event kind ("" for a kind /ws
// does not forward).
func eventType(k pump.EventKind) string {
	switch k {
	case pump.EventMessage:
		return wire.TypeMessage
	case pump.EventReply:
		return wire.TypeReply
	case pump.EventHuh:
		return wire.TypeHuh
	case pump.EventSystemError:
		return wire.TypeSystemError
	case pump.EventDeadLetter:
		return wire.TypeDeadLetter
	case pump.EventComplete:
		return wire.TypeComplete
	case pump.EventRefusal:
		return wire.TypeRefusal
	}
	return ""
}

// output implements sink: a printed line is queued as it is, a piece of
// streamed text joins the delta frame of its stream still waiting in the
// queue (see pendingDelta).
func (w *wsSocket) output(o organism.Output) {
	if o.Kind != organism.OutputDelta {
		w.mu.Lock()
		streamed := o.Kind == organism.OutputPrint && w.shown.take(o.Conversation, o.From, o.Text)
		w.mu.Unlock()
		if w.subs.wants(wire.TypeOutput) {
			if streamed {
				w.post(o.Conversation, streamedOutput{o})
				return
			}
			w.post(o.Conversation, o)
		}
		return
	}
	if !w.subs.wants(wire.TypeDelta) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.shown.delta(o)
	if q, ok := w.held[o.Conversation]; ok {
		if n := len(q); n > 0 {
			if d, ok := q[n-1].(*pendingDelta); ok && d.add(o) {
				return
			}
		}
		if len(q) >= cap(w.c.out) {
			w.c.tooSlow()
			return
		}
		w.held[o.Conversation] = append(q, newPendingDelta(o))
		return
	}
	w.c.sendDelta(o)
}

// encode turns a queued item into a JSON text frame (in the writer
// goroutine). The frames of a conversation are encoded without reflection
// (their AppendJSON) into a buffer the writer reuses: gorilla copies a
// message out before WriteMessage returns.
func (w *wsSocket) encode(item any) (int, []byte, error) {
	if cap(w.frame) > maxKeptFrame {
		w.frame = nil // a large frame's buffer is not kept
	}
	b := w.frame[:0]
	switch it := item.(type) {
	case pump.Event:
		var ok bool
		if b, ok = appendEventFrame(b, it, w.details); !ok {
			return 0, nil, nil
		}
	case streamedReply:
		b = appendReplyFrame(b, it.Event, true)
	case organism.Output:
		b = outputFrame(it, false).AppendJSON(b)
	case streamedOutput:
		b = outputFrame(it.Output, true).AppendJSON(b)
	case *pendingDelta:
		text, end := it.take()
		b = wire.Delta{Head: wire.Head{Type: wire.TypeDelta}, ThreadID: it.conv, Agent: it.agent, Text: text, End: end}.AppendJSON(b)
	case jsonAppender:
		b = it.AppendJSON(b)
	default:
		return jsonFrame(item)
	}
	w.frame = b
	return websocket.TextMessage, b, nil
}

// maxKeptFrame bounds the encoding buffer a socket keeps between frames:
// frames of a conversation are usually far smaller, and a large one's buffer
// goes with the next frame.
const maxKeptFrame = 8 << 10

// jsonAppender is a frame that encodes itself without reflection (the wire
// types of the frames sent most).
type jsonAppender interface {
	AppendJSON(b []byte) []byte
}

// appendEventFrame appends the /ws frame of a conversation event to b (ok
// false: the event has none). The frames are built and encoded as concrete
// values: no copy of them goes to the heap. Unless details is set (the
// socket's user sees them: seesFailureDetail), a huh frame carries only
// the diagnostics its client may read (callerDiagnostics) and a dead
// letter the canned failure.Undelivered.
func appendEventFrame(b []byte, e pump.Event, details bool) ([]byte, bool) {
	ts := stamp(e.Time)
	switch e.Kind {
	case pump.EventMessage:
		return wire.Message{Head: wire.Head{Type: wire.TypeMessage}, ThreadID: e.Conversation, From: e.From, To: e.To,
			Listener: e.Listener, PayloadType: e.PayloadName, Payload: string(payloadOf(e.Envelope)), Timestamp: ts,
			MessageID: eventID(wire.TypeMessage, e)}.AppendJSON(b), true
	case pump.EventReply:
		return appendReplyFrame(b, e, false), true
	case pump.EventHuh:
		diags := e.Diagnostics
		if !details && len(diags) > 0 {
			diags = callerDiagnostics(e)
		}
		return wire.Failure{Head: wire.Head{Type: wire.TypeHuh}, ThreadID: e.Conversation, From: e.From, To: e.To,
			Error: e.Error, Diagnostics: diags, Told: toldSender(e), Timestamp: ts,
			MessageID: eventID(wire.TypeHuh, e)}.AppendJSON(b), true
	case pump.EventSystemError:
		return wire.Failure{Head: wire.Head{Type: wire.TypeSystemError}, ThreadID: e.Conversation, From: e.From, To: e.To,
			Error: failureText(e), Timestamp: ts, MessageID: eventID(wire.TypeSystemError, e)}.AppendJSON(b), true
	case pump.EventDeadLetter:
		text, diags := e.Error, e.Diagnostics
		if !details {
			text, diags = failure.Undelivered, nil
		}
		return wire.Failure{Head: wire.Head{Type: wire.TypeDeadLetter}, ThreadID: e.Conversation, From: e.From, To: e.To,
			Error: text, Diagnostics: diags, Timestamp: ts, MessageID: eventID(wire.TypeDeadLetter, e)}.AppendJSON(b), true
	case pump.EventRefusal:
		return wire.Failure{Head: wire.Head{Type: wire.TypeRefusal}, ThreadID: e.Conversation, From: e.From, To: e.To,
			Error: e.Error, Timestamp: ts, MessageID: eventID(wire.TypeRefusal, e)}.AppendJSON(b), true
	case pump.EventComplete:
		return wire.Complete{Head: wire.Head{Type: wire.TypeComplete}, ThreadID: e.Conversation, Error: e.Error,
			Timestamp: ts, MessageID: eventID(wire.TypeComplete, e)}.AppendJSON(b), true
	}
	return b, false
}

// appendReplyFrame appends the reply frame of e to b; streamed marks a
// reply whose text the socket's delta frames already carried.
func appendReplyFrame(b []byte, e pump.Event, streamed bool) []byte {
	r := wire.Reply{Head: wire.Head{Type: wire.TypeReply}, ThreadID: e.Conversation, From: e.From, To: e.To,
		PayloadType: e.PayloadName, Payload: string(payloadOf(e.Envelope)), Timestamp: stamp(e.Time),
		MessageID: eventID(wire.TypeReply, e), Streamed: streamed}
	if text, ok := organism.PayloadText(e.Payload); ok {
		r.Text = text
	}
	return r.AppendJSON(b)
}

// outputFrame is the output frame of o; streamed marks interim text the
// socket's delta frames already carried. Its message_id is the same
// either way.
func outputFrame(o organism.Output, streamed bool) wire.Output {
	return wire.Output{Head: wire.Head{Type: wire.TypeOutput}, ThreadID: o.Conversation, From: o.From, Text: o.Text,
		MessageID: wire.MessageID(wire.TypeOutput, o.Conversation, o.Thread, o.From, o.Text), Streamed: streamed}
}

// eventID is the stable message_id of an event's frame: its envelope's
// SHA-256 when it has one (the journal's checksum), else a digest of what
// identifies it, the turn of the conversation included — a continued
// thread's next completion is a new event, the same one told again is not.
// A <huh> without an envelope is told apart from the others of its turn
// by the listener that failed and the attempt it is about: one reply's
// two bad messages, or a broadcast's two failing listeners, are two
// events with the same canned text; a SystemError, whose text and attempt
// are always the same, by what it is about (Event.About: the failed
// message's ref or its place in its sender's output), so one reply's two
// identical violations are two events.
func eventID(kind string, e pump.Event) string {
	if len(e.Envelope) > 0 {
		return wire.EnvelopeID(e.Envelope)
	}
	var turn [20]byte
	attempt := ""
	if h, ok := e.Payload.(*xmlpipe.Huh); ok && h != nil {
		attempt = string(h.OriginalAttempt)
	}
	t := string(strconv.AppendInt(turn[:0], e.Turn, 10))
	if e.About == "" { // the ids of events about nothing in particular stay as they were
		return wire.MessageID(kind, e.Conversation, e.Thread, e.From, e.To, e.PayloadName, e.Error, t, e.Listener, attempt)
	}
	return wire.MessageID(kind, e.Conversation, e.Thread, e.From, e.To, e.PayloadName, e.Error, t, e.Listener, attempt,
		e.About)
}

// stamp formats a time as RFC 3339 with nanoseconds, in UTC ("" for zero).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
