package bus

import (
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// Agent states of the API.
const (
	stateIdle       = "idle"
	stateProcessing = "processing"
	stateWaiting    = "waiting"
	stateError      = "error"
	statePaused     = "paused"
	stateHalted     = "halted"
)

// agentStatePoll is how often listener states are compared for the stream's
// agent_state events while a stream is open.
const agentStatePoll = 250 * time.Millisecond

// agentView is what agent states are computed from besides each listener's
// own ListenerInfo: the forwards outstanding, snapshot once per request or
// poll.
type agentView struct {
	// waiting maps a listener (lower case) to a thread it forwarded on whose
	// answer is outstanding.
	waiting map[string]string
}

// agentView snapshots the outstanding forwards: every live thread in a
// conversation with a message in flight is a forward its caller — the
// second-to-last segment of its path — waits on. Threads of finished
// conversations are not (a thread lives on after its conversation until the
// registry collects it).
func (s *Server) agentView() agentView {
	v := agentView{waiting: map[string]string{}}
	if s.live.empty() && s.pump.InFlight() == 0 && len(s.pump.Held()) == 0 {
		return v // nothing in flight, nothing held: nobody waits
	}
	recs := s.pump.Threads().Records() // parents before children
	root := make(map[string]string, len(recs))
	for _, r := range recs {
		conv := r.ID
		if r.Parent != "" {
			if c, ok := root[r.Parent]; ok {
				conv = c
			}
		}
		root[r.ID] = conv
		if len(r.Path) < 2 || !s.inFlight(conv) {
			continue
		}
		caller := strings.ToLower(r.Path[len(r.Path)-2])
		if _, ok := v.waiting[caller]; !ok {
			v.waiting[caller] = r.ID
		}
	}
	return v
}

// inFlight reports whether conversation conv has a message in flight: as
// the server's events say, or as the pump counts it (a conversation
// recovered at start — waiting on an approval, a halt — has sent no event
// yet).
func (s *Server) inFlight(conv string) bool {
	return s.live.has(conv) || s.pump.Running(conv)
}

// stateOf is a listener's API state, the first that holds of: paused
// (stopped by Pause), halted (stopped by the emergency halt), processing (a
// handler runs), error (its last handling failed and none finished since),
// waiting (it forwarded a message whose conversation is still in flight)
// and idle.
func (s *Server) stateOf(li pump.ListenerInfo, v agentView) string {
	switch {
	case li.Paused:
		return statePaused
	case li.Halted:
		return stateHalted
	case li.Active > 0 || len(li.Current) > 0:
		return stateProcessing
	case li.Failing:
		return stateError
	case v.waiting[strings.ToLower(li.Name)] != "":
		return stateWaiting
	}
	return stateIdle
}

// currentThread is the thread a listener's handler works on (the first of
// several), nil when none runs.
func currentThread(li pump.ListenerInfo) *string {
	if len(li.Current) == 0 {
		return nil
	}
	t := li.Current[0]
	return &t
}

// agentStates polls the listeners while /api/v1/ws streams are open and
// broadcasts agent_state events when a state (or the thread being worked
// on) changes.
type agentStates struct {
	s    *Server
	mu   sync.Mutex
	last map[string]agentState
}

// agentState is what an agent_state event reports.
type agentState struct {
	state   string
	current string
}

// newAgentStates starts the poller; it stops when the server shuts down.
func newAgentStates(s *Server) *agentStates {
	a := &agentStates{s: s, last: map[string]agentState{}}
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
	v := a.s.agentView()
	for _, li := range a.s.pump.Listeners() {
		now := agentState{state: a.s.stateOf(li, v)}
		cur := currentThread(li)
		if cur != nil {
			now.current = *cur
		}
		a.mu.Lock()
		prev, seen := a.last[li.Name]
		a.last[li.Name] = now
		a.mu.Unlock()
		if seen && prev == now {
			continue
		}
		ev := streamEvent{name: streamAgentState, agents: []string{li.Name}, body: a.s.agentStateBody(li, v),
			view: func(sess auth.Session) any { return a.s.agentStateBodyFor(sess, li, v) }}
		a.s.broadcast(ev)
	}
}

// agentStateBody is the agent_state event of li.
func (s *Server) agentStateBody(li pump.ListenerInfo, v agentView) map[string]any {
	return map[string]any{"event": streamAgentState, "agent": li.Name, "state": s.stateOf(li, v),
		"current_thread": currentThread(li), "queue_depth": li.QueueDepth, "active": li.Active}
}

// agentStateBodyFor is the agent_state event of li as sess may see it
// (listenerFor, viewFor): for a user with a profile, without the queue
// depth, which counts the work of every thread.
func (s *Server) agentStateBodyFor(sess auth.Session, li pump.ListenerInfo, v agentView) map[string]any {
	body := s.agentStateBody(s.listenerFor(sess, li), s.viewFor(sess, v))
	if sess.Profile != "" {
		delete(body, "queue_depth")
	}
	return body
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

func (l *liveConversations) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.set) == 0
}
