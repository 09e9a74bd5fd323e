package bus

import (
	"cmp"
	"slices"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// What a user with a profile is told about the organism as a whole is
// scoped to what they may see, so that no count, state or error reveals
// activity outside the profile: live threads are counted only when of the
// profile or narrower; a visible listener shows the threads it works on,
// the forwards it waits on and its last error only when they are of such a
// thread, and names only the peers the profile reaches. Counters the pump
// keeps for the whole organism only (messages processed and failed, in
// flight, queue depths, handled counts, context slots, handler latencies)
// are not shown to them: they read 0 (null for times) and the answer names
// the profile it was scoped to.

// listenerFor is li as sess may see it (see above; li itself for a user
// without a profile).
func (s *Server) listenerFor(sess auth.Session, li pump.ListenerInfo) pump.ListenerInfo {
	if sess.Profile == "" {
		return li
	}
	if !li.LastErrorTime.IsZero() && !within(li.LastErrorProfile, sess.Profile) {
		li.LastError, li.LastErrorTime, li.LastErrorThread, li.LastErrorProfile = "", time.Time{}, "", ""
		li.Failing = false
	}
	li.Current = slices.DeleteFunc(slices.Clone(li.Current), func(t string) bool {
		return !within(s.threadProfile(t), sess.Profile)
	})
	li.Active = min(li.Active, len(li.Current))
	li.Peers = slices.DeleteFunc(slices.Clone(li.Peers), func(p string) bool { return !s.namesVisible(sess, p) })
	li.QueueDepth, li.Handled, li.SlotsHeld, li.Lingering = 0, 0, 0, 0
	li.LastActivity = time.Time{}
	return li
}

// viewFor is v as sess may see it: only the forwards outstanding on
// threads of the user's profile or narrower.
func (s *Server) viewFor(sess auth.Session, v agentView) agentView {
	if sess.Profile == "" {
		return v
	}
	out := agentView{waiting: make(map[string]string, len(v.waiting))}
	for l, t := range v.waiting {
		if within(s.threadProfile(t), sess.Profile) {
			out.waiting[l] = t
		}
	}
	return out
}

// threadCounts counts the live threads sess may see: active, of a
// conversation still running, and idle, kept after theirs completed.
func (s *Server) threadCounts(sess auth.Session) (active, idle int) {
	threads := s.pump.Threads()
	for _, r := range threads.Records() {
		if sess.Profile != "" && !within(r.Profile, sess.Profile) {
			continue
		}
		if s.pump.Running(threads.Root(r.ID)) {
			active++
		} else {
			idle++
		}
	}
	return active, idle
}

// visibleListeners counts the listeners sess sees.
func (s *Server) visibleListeners(sess auth.Session) int {
	n := 0
	for _, li := range s.pump.Listeners() {
		if s.visible(sess, li.Name) {
			n++
		}
	}
	return n
}

// callsFor keeps the LLM calls sess may see: of an agent the profile
// reaches, on a thread of the profile or narrower (judged as the journal
// readers judge it, journalView; by the live thread's profile without a
// journal).
func (s *Server) callsFor(sess auth.Session, calls []organism.Call) []organism.Call {
	if sess.Profile == "" {
		return calls
	}
	var view *journalView
	if s.opts.Store != nil {
		view = s.journalView(sess, s.opts.Store)
	}
	return slices.DeleteFunc(calls, func(c organism.Call) bool {
		if !s.namesVisible(sess, c.Agent) {
			return true
		}
		if view != nil {
			return !view.thread(c.Thread, c.Conversation)
		}
		return !within(s.threadProfile(c.Thread), sess.Profile)
	})
}

// approvalVisible reports whether sess may see (and decide) approval a:
// one of a private kind — memory consent — only when it is of the user's
// own conversation, or they are an admin (organism.Approval.VisibleTo);
// for a user with a profile, one that names no listener outside the
// profile and waits on a thread the user may see (judged as the journal
// readers judge it without the thread live).
func (s *Server) approvalVisible(sess auth.Session, a organism.Approval) bool {
	if !a.VisibleTo(sess.Username, sess.Role.Allows(auth.Admin)) {
		return false
	}
	if sess.Profile == "" {
		return true
	}
	if !s.namesVisible(sess, a.Agent, a.Target) {
		return false
	}
	thread := cmp.Or(a.Thread, a.Conversation)
	if prof, live := s.pump.Threads().Profile(thread); live {
		return within(prof, sess.Profile)
	}
	return s.opts.Store != nil && s.journalView(sess, s.opts.Store).thread(thread, a.Conversation)
}
