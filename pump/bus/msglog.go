package bus

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// logSockets is the set of /api/v1/ws/messages sockets: the message log
// stream.
type logSockets struct {
	mu  sync.RWMutex
	set map[*logSocket]struct{}
}

func newLogSockets() *logSockets { return &logSockets{set: map[*logSocket]struct{}{}} }

func (ls *logSockets) add(s *logSocket) {
	ls.mu.Lock()
	ls.set[s] = struct{}{}
	ls.mu.Unlock()
}

func (ls *logSockets) remove(s *logSocket) {
	ls.mu.Lock()
	delete(ls.set, s)
	ls.mu.Unlock()
}

// offer hands an accepted message to every socket whose filter matches it
// (inside the pump: never blocks).
func (ls *logSockets) offer(item logItem) {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	for s := range ls.set {
		s.offer(item)
	}
}

// logItem is an accepted message waiting in a log socket's queue; it is
// encoded by the socket's writer. slot is nil for a reply leaving the
// organism.
type logItem struct {
	e    pump.Event
	slot *int
}

// logSocket is one message log client. Until its first subscribe it gets
// nothing.
type logSocket struct {
	s       *Server
	c       *conn
	sess    auth.Session
	checked time.Time

	mu sync.Mutex
	f  *wire.LogFilter
}

// handleMessagesWS is GET /api/v1/ws/messages (viewer): the message log
// stream.
func (s *Server) handleMessagesWS(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		writeError(w, http.StatusServiceUnavailable, "Server shutting down")
		return
	}
	defer s.leave()
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	sock := &logSocket{s: s, sess: sessionOf(r.Context()), checked: time.Now()}
	sock.c = s.newConn(ws, s.log.With("socket", "messages", "user", sock.sess.Username, "addr", clientAddr(r)),
		sock.encode)
	sock.c.keepalive()
	s.logs.add(sock)
	defer func() {
		s.logs.remove(sock)
		sock.c.finish()
	}()
	for {
		_, data, err := sock.c.read()
		if err != nil {
			return
		}
		if !s.recheck(sock.c.ctx, sock.sess, &sock.checked) {
			sock.c.close(websocket.ClosePolicyViolation, "Session expired")
			return
		}
		sock.command(data)
	}
}

// command answers one client frame: subscribe is the only command.
func (ls *logSocket) command(data []byte) {
	var cmd wire.LogCommand
	if err := json.Unmarshal(data, &cmd); err != nil {
		ls.c.send(wire.LogEvent{Event: wire.LogError, Error: "Invalid JSON"})
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
	if ls.f != nil && logMatch(*ls.f, item.e) {
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
func (ls *logSocket) encode(item any) (int, []byte, bool) {
	var v any = item
	if it, ok := item.(logItem); ok {
		v = logMessage(it)
	}
	b, err := json.Marshal(v)
	if err != nil {
		ls.c.log.Error("encode log message", "error", err)
		return 0, nil, false
	}
	return websocket.TextMessage, b, true
}

// logMessage is the log stream's frame of an accepted message.
func logMessage(it logItem) wire.LogMessage {
	e := it.e
	sum := sha256.Sum256(e.Envelope)
	return wire.LogMessage{ID: hex.EncodeToString(sum[:]), ThreadID: e.Thread, Conversation: e.Conversation,
		From: e.From, To: e.To, Listener: e.Listener, PayloadType: e.PayloadName,
		Payload: string(payloadOf(e.Envelope)), Timestamp: stamp(e.Time), SlotIndex: it.slot}
}

// logEvent feeds the message log: every message delivered to a listener
// (numbered in its thread's history) and every reply leaving the organism.
func (s *Server) logEvent(e pump.Event) {
	slot, numbered := s.slots.event(e)
	switch {
	case numbered:
		s.logs.offer(logItem{e: e, slot: &slot})
	case e.Kind == pump.EventReply:
		s.logs.offer(logItem{e: e})
	}
}
