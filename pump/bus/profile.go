package bus

import (
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry"
)

// visible reports whether the listener called name exists for sess: a
// user with a security profile (auth.Session.Profile) sees only the
// listeners the profile reaches — the others are answered exactly as
// listeners that do not exist, in listings, lookups and sends alike.
func (s *Server) visible(sess auth.Session, name string) bool {
	return sess.Profile == "" || s.pump.ProfileReaches(sess.Profile, name)
}

// A user with a profile sees on the event streams only what happens on
// threads of that profile or a narrower one (Profile Monotonicity: what
// its own conversations may become), and nothing that names a listener
// outside the profile: such a listener stays indistinguishable from one
// that does not exist. A thread whose profile is not known (no longer
// live when asked) is not shown to it. Users without a profile — admins,
// operators, viewers as configured — see everything, as before.

// within reports whether a thread of profile thread is of profile user or
// narrower: every profile user names is one of thread's terms. A thread
// without a profile ("") is wider than any.
func within(thread, user string) bool {
	if thread == "" {
		return false
	}
	t := registry.NarrowProfile(thread, "")
	return registry.NarrowProfile(t, user) == t
}

// namesVisible reports whether every name that is a listener is one sess
// sees (names of parties outside the organism, "core" and "system" are no
// listeners).
func (s *Server) namesVisible(sess auth.Session, names ...string) bool {
	if sess.Profile == "" {
		return true
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if _, ok := s.pump.Lookup(n); ok && !s.pump.ProfileReaches(sess.Profile, n) {
			return false
		}
	}
	return true
}

// seesEvent reports whether sess may see pump event e (see above).
func (s *Server) seesEvent(sess auth.Session, e pump.Event) bool {
	return sess.Profile == "" || within(e.Profile, sess.Profile) && s.namesVisible(sess, e.From, e.To, e.Listener)
}

// threadVisible reports whether sess may see thread id, whose history
// names the parties names: a live thread of its profile or narrower that
// names no listener outside it.
func (s *Server) threadVisible(sess auth.Session, id string, names ...string) bool {
	return sess.Profile == "" || within(s.threadProfile(id), sess.Profile) && s.namesVisible(sess, names...)
}

// threadProfile is the profile of live thread id ("" for none or when it
// is not live).
func (s *Server) threadProfile(id string) string {
	if id == "" {
		return ""
	}
	p, _ := s.pump.Threads().Profile(id)
	return p
}
