package bus

import (
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// Agent states of the API.
const (
	stateIdle       = "idle"
	stateProcessing = "processing"
	statePaused     = "paused"
)

// agentStatePoll is how often listener states are compared for the stream's
// agent_state events while a stream is open.
const agentStatePoll = 250 * time.Millisecond

// stateOf is a listener's API state: paused, processing (a handler runs) or
// idle.
func (s *Server) stateOf(li pump.ListenerInfo) string {
	switch {
	case s.pump.Paused(li.Name):
		return statePaused
	case li.Active > 0:
		return stateProcessing
	}
	return stateIdle
}

// agentStates polls the listeners while /api/v1/ws streams are open and
// broadcasts agent_state events when a state changes.
type agentStates struct {
	s    *Server
	mu   sync.Mutex
	last map[string]string
}

// newAgentStates starts the poller; it stops when the server shuts down.
func newAgentStates(s *Server) *agentStates {
	a := &agentStates{s: s, last: map[string]string{}}
	s.wg.Add(1)
	go a.run()
	return a
}

func (a *agentStates) run() {
	defer a.s.wg.Done()
	t := time.NewTicker(agentStatePoll)
	defer t.Stop()
	for {
		select {
		case <-a.s.ctx.Done():
			return
		case <-t.C:
			if a.s.streams.empty() {
				a.mu.Lock()
				clear(a.last)
				a.mu.Unlock()
				continue
			}
			a.poll()
		}
	}
}

// poll broadcasts the listeners whose state changed since the last poll.
func (a *agentStates) poll() {
	for _, li := range a.s.pump.Listeners() {
		state := a.s.stateOf(li)
		a.mu.Lock()
		prev, seen := a.last[li.Name]
		a.last[li.Name] = state
		a.mu.Unlock()
		if seen && prev == state {
			continue
		}
		a.s.streams.broadcast(streamEvent{name: streamAgentState, agents: []string{li.Name}, body: map[string]any{
			"event": streamAgentState, "agent": li.Name, "state": state, "queue_depth": li.QueueDepth,
			"active": li.Active}})
	}
}

// killedRemembered bounds how many killed conversations the API remembers
// (for the "killed" thread status).
const killedRemembered = 4096

// killedSet remembers the most recently killed conversations and threads.
type killedSet struct {
	mu    sync.Mutex
	max   int
	set   map[string]struct{}
	order []string
}

func newKilledSet(n int) *killedSet { return &killedSet{max: n, set: map[string]struct{}{}} }

func (k *killedSet) add(ids ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		if _, ok := k.set[id]; ok || id == "" {
			continue
		}
		k.set[id] = struct{}{}
		k.order = append(k.order, id)
		if len(k.order) > k.max {
			delete(k.set, k.order[0])
			k.order = k.order[1:]
		}
	}
}

func (k *killedSet) has(ids ...string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		if _, ok := k.set[id]; ok {
			return true
		}
	}
	return false
}

// liveConversations are the conversations with a message in flight (seen
// by the server since it started): a message event makes one live, its
// completion ends it.
type liveConversations struct {
	mu  sync.Mutex
	set map[string]struct{}
}

func (l *liveConversations) event(e pump.Event) {
	if e.Conversation == "" {
		return
	}
	switch e.Kind {
	case pump.EventMessage:
		l.mu.Lock()
		l.set[e.Conversation] = struct{}{}
		l.mu.Unlock()
	case pump.EventComplete:
		l.mu.Lock()
		delete(l.set, e.Conversation)
		l.mu.Unlock()
	}
}

func (l *liveConversations) has(conv string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.set[conv]
	return ok
}
