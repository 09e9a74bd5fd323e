package bus

import (
	"net/http"
	"slices"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// logItem is an accepted message waiting in a log socket's queue; it is
// encoded by the socket's writer. slot is nil for a reply leaving the
// organism.
type logItem struct {
	e    pump.Event
	slot *int
	// mem says who may read the message's memory text (nil: none).
	mem *memoryEvent
	// withheld: the socket's user may not read the message's memory text
	// (its payload is left out).
	withheld bool
}

// logSocket is one message log client. Until its first subscribe it gets
// nothing.
type logSocket struct {
	s *Server
	c *conn

	mu sync.Mutex
	f  *wire.LogFilter
}

// handleMessagesWS is GET /api/v1/ws/messages (viewer): the message log
// stream.
func (s *Server) handleMessagesWS(w http.ResponseWriter, r *http.Request) {
	sock := &logSocket{s: s}
	if sock.c = s.openConn(w, r, "messages", sessionOf(r.Context()), sock.encode); sock.c == nil {
		return
	}
	defer sock.c.finish()
	s.logs.add(sock)
	defer s.logs.remove(sock)
	sock.c.serve(sock.command)
}

// command answers one client frame: subscribe is the only command.
func (ls *logSocket) command(data []byte) {
	var cmd wire.LogCommand
	if err := decodeJSON(data, &cmd); err != nil {
		ls.c.send(wire.LogEvent{Event: wire.LogError, Error: jsonErrorText(err)})
		return
	}
	if cmd.Cmd != wire.CmdSubscribe {
		ls.c.send(wire.LogEvent{Event: wire.LogError, Error: "Unknown command: " + cmd.Cmd})
		return
	}
	f := wire.LogFilter{Agents: orEmpty(cmd.Filter.Agents), Threads: orEmpty(cmd.Filter.Threads),
		PayloadTypes: orEmpty(cmd.Filter.PayloadTypes)}
	// The answer is queued under the lock, so no message admitted by the new
	// filter is sent before it.
	ls.mu.Lock()
	ls.f = &f
	ls.c.send(wire.LogEvent{Event: wire.LogSubscribed, Filter: &f})
	ls.mu.Unlock()
}

// offer queues item when the subscription matches it.
func (ls *logSocket) offer(item logItem) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.f != nil && logMatch(*ls.f, item.e) && ls.s.seesEvent(ls.c.sess, item.e) {
		item.withheld = !item.mem.reads(ls.c.sess)
		item.mem = nil
		ls.c.send(item)
	}
}

// logMatch reports whether f admits the message of e.
func logMatch(f wire.LogFilter, e pump.Event) bool {
	if len(f.PayloadTypes) > 0 && !slices.Contains(f.PayloadTypes, e.PayloadName) {
		return false
	}
	if len(f.Threads) > 0 && !overlaps(f.Threads, []string{e.Thread, e.Conversation}) {
		return false
	}
	if len(f.Agents) > 0 && !overlaps(f.Agents, []string{e.From, e.To, e.Listener}) {
		return false
	}
	return true
}

// encode turns a queued item into a JSON text frame (in the writer).
func (ls *logSocket) encode(item any) (int, []byte, error) {
	if it, ok := item.(logItem); ok {
		return jsonFrame(logMessage(it))
	}
	return jsonFrame(item)
}

// logMessage is the log stream's frame of an accepted message.
func logMessage(it logItem) wire.LogMessage {
	e := it.e
	m := wire.LogMessage{ID: messageID(e.Envelope), ThreadID: e.Thread, Conversation: e.Conversation,
		From: e.From, To: e.To, Listener: e.Listener, PayloadType: e.PayloadName,
		Payload: string(payloadOf(e.Envelope)), Timestamp: stamp(e.Time), SlotIndex: it.slot}
	if it.withheld {
		m.Payload, m.Withheld = "", withheldMemory
	}
	return m
}

// logEvent feeds the message log: every message delivered to a listener
// (numbered in its thread's history) and every reply leaving the organism.
func (s *Server) logEvent(e pump.Event) {
	slot, numbered := s.slots.event(e) // always: it forgets the number observe gave
	if !numbered && e.Kind != pump.EventReply || s.logs.empty() {
		return
	}
	item := logItem{e: e, mem: s.memoryEventOf(e)}
	if numbered {
		n := slot
		item.slot = &n
	}
	s.logs.each(func(ls *logSocket) { ls.offer(item) })
}
