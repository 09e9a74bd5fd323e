package bus

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Events of the /api/v1/ws stream (the "event" field).
const (
	streamConnected     = "connected"
	streamSubscribed    = "subscribed"
	streamMessage       = "message"
	streamThreadCreated = "thread_created"
	streamThreadUpdated = "thread_updated"
	streamError         = "error"
	streamAgentState    = "agent_state"
	streamInjected      = "injected"
	streamDelta         = "delta"
)

// streamEvents offers a pump event to every stream (inside the pump: never
// blocks).
func (s *Server) streamEvents(e pump.Event) {
	s.turns.event(e)
	facts := eventFacts{mem: s.memoryEventOf(e)}
	switch {
	case e.Kind == pump.EventComplete:
		facts.status = s.completionStatus(e)
	case e.Kind == pump.EventMessage && e.Thread == e.Conversation && !s.streams.empty():
		if _, fromListener := s.pump.Lookup(e.From); !fromListener {
			facts.owner = s.createdOwner(e.Conversation)
		}
	}
	s.streams.each(func(st *streamSocket) { st.offerEvent(e, facts) })
}

// eventFacts is what is read once of a pump event for every stream: who
// may read its memory text (mem, nil when it has none), for a
// completion the conversation's status, for a conversation's message from
// outside (thread_created) its owner.
type eventFacts struct {
	mem           *memoryEvent
	status, owner string
}

// createdOwner is the owner of conversation conv for its thread_created
// event, as the REST thread names it (conversationOwner): "" for none, or
// when it cannot be read (logged).
func (s *Server) createdOwner(conv string) string {
	owner, err := s.conversationOwner(conv)
	if err != nil {
		s.log.Warn("thread_created: owner lookup failed", "conversation", conv, "error", err)
	}
	return owner
}

// streamDelta offers a piece of an agent's streamed text to every stream
// whose subscription matches event "delta", the conversation or thread, and
// the agent (inside the organism: never blocks).
func (s *Server) streamDelta(o organism.Output) {
	// The thread's profile as the piece was written (it may have ended).
	ev := streamEvent{name: streamDelta, threads: []string{o.Conversation, o.Thread}, agents: []string{o.From},
		profile: o.Profile}
	s.streams.each(func(st *streamSocket) {
		if st.c.sess.Profile != "" && !s.profileSees(st.c.sess, ev) {
			return
		}
		st.mu.Lock() // see offer
		defer st.mu.Unlock()
		if st.f.match(ev) {
			st.c.sendDelta(o)
			st.shown.delta(o)
		}
	})
}

// broadcast offers every stream an event the server produced itself.
func (s *Server) broadcast(ev streamEvent) {
	s.streams.each(func(st *streamSocket) { st.offer(ev) })
}

// streamEvent is one event of the stream, filtered by its name, threads and
// agents; Body is the JSON object sent.
type streamEvent struct {
	name    string
	threads []string
	agents  []string
	body    any
	// profile is the profile of the thread the event is about ("" for
	// none, or not known): a user with a profile sees an event about a
	// thread only when it is theirs or narrower (profileSees).
	profile string
	// view, when set, is the body as a user with a profile may see it
	// (agent_state: the listener scoped by listenerFor); such a user is
	// sent it only when it differs from the last one they were sent for
	// the same agent, so a change they may not see sends them nothing.
	view func(auth.Session) any
	// wide marks an event about the whole organism's traffic (a guardian
	// alert counts every sender's refusals): not sent to a user with a
	// profile.
	wide bool
	// only, when set, is who may see the event at all (an approval of
	// another user's memory consent is not sent to them).
	only func(auth.Session) bool
}

// profileSees reports whether sess, a user with a profile, may see ev: it
// names no listener outside the profile, and its thread, if it is about
// one, is of the profile or narrower.
func (s *Server) profileSees(sess auth.Session, ev streamEvent) bool {
	if ev.wide || !s.namesVisible(sess, ev.agents...) {
		return false
	}
	for _, t := range ev.threads {
		if t != "" {
			return within(ev.profile, sess.Profile)
		}
	}
	return true
}

// filter is a stream's subscription: empty lists match everything.
type filter struct {
	Threads []string `json:"threads"`
	Agents  []string `json:"agents"`
	Events  []string `json:"events"`
}

func (f filter) match(ev streamEvent) bool {
	if len(f.Events) > 0 && !slices.Contains(f.Events, ev.name) {
		return false
	}
	if len(f.Threads) > 0 && !overlaps(f.Threads, ev.threads) {
		return false
	}
	if len(f.Agents) > 0 && !overlaps(f.Agents, ev.agents) {
		return false
	}
	return true
}

func overlaps(want, have []string) bool {
	for _, h := range have {
		if h != "" && slices.Contains(want, h) {
			return true
		}
	}
	return false
}

// streamSocket is one /api/v1/ws client.
type streamSocket struct {
	s *Server
	c *conn

	mu sync.Mutex
	f  filter
	// sent is, for a user with a profile, the last agent_state body sent
	// for each agent (as JSON; see streamEvent.view).
	sent map[string]string
	// shown is the text the socket's delta events carried per agent's
	// stream, which the message event of a reply repeating it marks
	// streamed (as /ws marks its reply frames).
	shown shownStreams
}

// streamCommand is a client frame of the stream.
type streamCommand struct {
	Cmd string `json:"cmd"`
	filter
	injectRequest
}

// handleStreamWS is GET /api/v1/ws: the organism's event stream.
func (s *Server) handleStreamWS(w http.ResponseWriter, r *http.Request) {
	sock := &streamSocket{s: s}
	if sock.c = s.openConn(w, r, "api", sessionOf(r.Context()), sock.encode); sock.c == nil {
		return
	}
	defer sock.c.finish()
	defer s.streams.remove(sock)
	names := []string{}
	for _, l := range s.pump.Listeners() {
		if s.visible(sock.c.sess, l.Name) {
			names = append(names, l.Name)
		}
	}
	threads := s.pump.Threads().Len()
	if sess := sock.c.sess; sess.Profile != "" { // only the live threads the profile sees
		active, idle := s.threadCounts(sess)
		threads = active + idle
		// agent_state events start from the listeners as seen now, so
		// the first one sent is one the user can see change.
		sock.sent = map[string]string{}
		v := s.agentView()
		for _, li := range s.pump.Listeners() {
			if s.visible(sess, li.Name) {
				if key, err := json.Marshal(s.agentStateBodyFor(sess, li, v)); err == nil {
					sock.sent[li.Name] = string(key)
				}
			}
		}
	}
	// The socket joins the streams before its connected event is queued,
	// and under st.mu, which every offer holds from its match to its
	// queueing: an event that happens once the client read "connected"
	// reaches it (it was lost when the socket joined after, on a loaded
	// machine), and none is queued before "connected".
	sock.mu.Lock()
	s.streams.add(sock)
	sock.c.send(map[string]any{"event": streamConnected, "organism": s.pump.Organism(), "agents": names,
		"threads": threads})
	sock.mu.Unlock()
	sock.c.serve(sock.command)
}

// command answers one client frame: subscribe or inject.
func (st *streamSocket) command(data []byte) {
	var cmd streamCommand
	if err := decodeJSON(data, &cmd); err != nil {
		st.c.send(map[string]any{"event": streamError, "error": jsonErrorText(err)})
		return
	}
	switch cmd.Cmd {
	case "subscribe":
		// The answer is queued under the lock that offers hold from
		// their match to their queueing: every event after it matches
		// the new filter.
		st.mu.Lock()
		st.f = cmd.filter
		st.c.send(map[string]any{"event": streamSubscribed, "threads": orEmpty(cmd.Threads),
			"agents": orEmpty(cmd.Agents), "events": orEmpty(cmd.Events)})
		st.mu.Unlock()
	case "inject":
		if !st.c.sess.Role.Allows(auth.Operator) {
			st.c.send(map[string]any{"event": streamError, "error": "Forbidden"})
			return
		}
		res, apiErr := st.s.inject(st.c.ctx, st.c.sess, cmd.injectRequest)
		if apiErr != nil {
			ev := map[string]any{"event": streamError, "error": apiErr.body.Error, "diagnostics": apiErr.body.Diagnostics}
			if apiErr.retryAfter > 0 {
				ev["retry_after"] = apiErr.retryAfter
			}
			st.c.send(ev)
			return
		}
		ev := map[string]any{"event": streamInjected, "thread_id": res.ThreadID, "message_id": res.MessageID}
		if res.Notice != "" { // the agent's earlier history is gone (injectResult)
			ev["notice"] = res.Notice
		}
		st.c.send(ev)
	default:
		st.c.send(map[string]any{"event": streamError, "error": "Unknown command: " + cmd.Cmd})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// offerEvent turns a pump event into stream events and offers them; facts
// say who may read it when it is memory traffic (its text is withheld
// from anyone else) and a completion's status.
func (st *streamSocket) offerEvent(e pump.Event, facts eventFacts) {
	mem := facts.mem
	if !st.s.seesEvent(st.c.sess, e) {
		return // nothing of a thread wider than the user's profile, nor of a listener outside it
	}
	threads := []string{e.Conversation, e.Thread}
	agents := []string{e.From, e.To, e.Listener}
	switch e.Kind {
	case pump.EventMessage:
		if e.Thread == e.Conversation {
			if _, fromListener := st.s.pump.Lookup(e.From); !fromListener {
				st.offer(streamEvent{name: streamThreadCreated, threads: threads, agents: agents, profile: e.Profile,
					body: map[string]any{"event": streamThreadCreated, "thread": map[string]any{
						"id": e.Conversation, "owner": facts.owner, "status": "active",
						"participants": []string{e.From, e.Listener}, "created_at": stamp(e.Time)},
						"message_id": wire.MessageID(streamThreadCreated, e.Conversation)}})
			}
		}
		st.offer(streamEvent{name: streamMessage, threads: threads, agents: agents, profile: e.Profile,
			body: st.messageBody(e, mem)})
	case pump.EventReply:
		// A reply whose text the socket's deltas carried whole says so,
		// and a client that drew them draws it once.
		text, _ := organism.PayloadText(e.Payload)
		st.mu.Lock()
		streamed := st.shown.take(e.Conversation, e.From, text)
		st.mu.Unlock()
		body := st.messageBody(e, mem)
		if streamed {
			body = streamedBody(body)
		}
		st.offer(streamEvent{name: streamMessage, threads: threads, agents: agents, profile: e.Profile, body: body})
	case pump.EventHuh, pump.EventSystemError, pump.EventDeadLetter, pump.EventRefusal:
		agent := e.Listener
		if agent == "" {
			agent = e.To
		}
		text := failureText(e)
		if e.Kind == pump.EventDeadLetter && !seesFailureDetail(st.c.sess) {
			text = failure.Undelivered // its reason may be a handler's error (errdetail.go)
		}
		body := map[string]any{"event": streamError, "kind": string(e.Kind), "thread_id": e.Conversation,
			"agent": agent, "error": text, "timestamp": stamp(e.Time), "message_id": eventID(string(e.Kind), e)}
		if !mem.reads(st.c.sess) && e.Kind != pump.EventRefusal { // a refusal's reason is the governance's words
			body["error"], body["withheld"] = withheldMemoryText, withheldMemory // it may quote what was asked to remember
		}
		st.offer(streamEvent{name: streamError, threads: threads, agents: agents, profile: e.Profile, body: body})
	case pump.EventComplete:
		st.mu.Lock()
		st.shown.forget(e.Conversation)
		st.mu.Unlock()
		st.offer(streamEvent{name: streamThreadUpdated, threads: threads, profile: e.Profile, body: map[string]any{
			"event": streamThreadUpdated, "thread_id": e.Conversation, "status": facts.status,
			"timestamp": stamp(e.Time), "message_id": eventID(wire.TypeComplete, e)}})
	}
}

// offer queues ev when it matches the subscription. The match and the
// queueing happen under st.mu, as does a subscribe's answer: an event the
// old filter let through never follows the answer to a new one.
func (st *streamSocket) offer(ev streamEvent) {
	if ev.only != nil && !ev.only(st.c.sess) {
		return
	}
	if st.c.sess.Profile != "" && !st.s.profileSees(st.c.sess, ev) {
		return // a listener outside the session's profile does not exist for it
	}
	if ev.view != nil && st.c.sess.Profile != "" {
		st.mu.Lock()
		ok := st.f.match(ev)
		st.mu.Unlock()
		if !ok {
			return
		}
		body := ev.view(st.c.sess)
		key, err := json.Marshal(body)
		if err != nil {
			return
		}
		agent := ev.agents[0]
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.f.match(ev) || st.sent[agent] == string(key) { // resubscribed meanwhile, or nothing new
			return
		}
		st.sent[agent] = string(key)
		st.c.send(body)
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f.match(ev) {
		st.c.send(ev.body)
	}
}

// messageBody is the body of the message event of e: e itself (the writer
// encodes it), or, for memory traffic the socket's user may not read, its
// Message model without the payload (withheld).
func (st *streamSocket) messageBody(e pump.Event, mem *memoryEvent) any {
	if mem.reads(st.c.sess) {
		return e
	}
	m := eventMessage(e)
	m.Payload, m.Withheld = "", withheldMemory
	return streamMessageBody{Event: streamMessage, Message: m}
}

// streamMessageBody is a message event of the stream. Streamed marks a
// reply whose text the socket's delta events already carried.
type streamMessageBody struct {
	Event    string     `json:"event"`
	Message  apiMessage `json:"message"`
	Streamed bool       `json:"streamed,omitempty"`
}

// streamedBody is messageBody's body marked streamed.
func streamedBody(body any) any {
	switch b := body.(type) {
	case pump.Event:
		return streamMessageBody{Event: streamMessage, Message: eventMessage(b), Streamed: true}
	case streamMessageBody:
		b.Streamed = true
		return b
	}
	return body
}

// encode turns a queued item into a JSON text frame (in the writer).
func (st *streamSocket) encode(item any) (int, []byte, error) {
	switch it := item.(type) {
	case pump.Event:
		return jsonFrame(streamMessageBody{Event: streamMessage, Message: eventMessage(it)})
	case *pendingDelta:
		text, end := it.take()
		return jsonFrame(streamDeltaBody{Event: streamDelta, ThreadID: it.conv, Agent: it.agent, Text: text, End: end})
	}
	return jsonFrame(item)
}

// streamDeltaBody is a delta event of the stream: an agent's streamed text.
type streamDeltaBody struct {
	Event    string `json:"event"`
	ThreadID string `json:"thread_id"`
	Agent    string `json:"agent"`
	Text     string `json:"text"`
	End      bool   `json:"end,omitempty"`
}

// eventMessage is the API's Message model of a pump event.
func eventMessage(e pump.Event) apiMessage {
	return apiMessage{ID: messageID(e.Envelope), ThreadID: e.Thread, Conversation: e.Conversation,
		Direction: directionOf(e), Kind: "message", From: e.From, To: e.To, Listener: e.Listener,
		PayloadType: e.PayloadName, Payload: string(payloadOf(e.Envelope)), Timestamp: stamp(e.Time)}
}

// directionOf is "outbound" for a reply leaving the organism, else "inbound"
// (a message delivered to a listener).
func directionOf(e pump.Event) string {
	if e.Kind == pump.EventReply {
		return "outbound"
	}
	return "inbound"
}

// failureText is the error text of a failure event: a SystemError's
// message, else the event's error.
func failureText(e pump.Event) string {
	if se, ok := e.Payload.(*xmlpipe.SystemError); ok {
		return se.Message
	}
	return e.Error
}
