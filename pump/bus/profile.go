package bus

import (
	"cmp"
	"slices"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
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

// historyView decides, for one /ws request of sess, which threads and
// conversations it may see in a history (the threads and monitor
// commands): a live one as threadVisible judges it, an ended one as the
// REST journal does (journalView.thread: the profile the journal recorded
// with it), so a user with a profile finds the ended conversations of
// their profile there as GET /api/v1/threads lists them. Without a
// journal an ended thread is not shown to them.
func (s *Server) historyView(sess auth.Session) func(id, conv string, names ...string) bool {
	if sess.Profile == "" || s.opts.Store == nil {
		return func(id, _ string, names ...string) bool { return s.threadVisible(sess, id, names...) }
	}
	v := s.journalView(sess, s.opts.Store)
	return func(id, conv string, names ...string) bool {
		return v.thread(id, conv) && s.namesVisible(sess, names...)
	}
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

// journalView decides, for one request, which journaled threads a user
// with a profile may see. A live thread is judged by its profile, as on
// the event streams; an ended one by the profile the journal recorded with
// its entries. Entries journaled before the journal
// recorded profiles carry none: of those the user sees only the ones of a
// conversation they began themselves (Principal.Owns). Either way no entry
// naming a listener outside the profile is shown.
type journalView struct {
	s    *Server
	sess auth.Session
	st   *store.Store
	// threads caches each thread's verdict, own each conversation's.
	threads, own map[string]bool
}

// journalView returns the view of sess over st.
func (s *Server) journalView(sess auth.Session, st *store.Store) *journalView {
	return &journalView{s: s, sess: sess, st: st, threads: map[string]bool{}, own: map[string]bool{}}
}

// thread reports whether the user may see thread id of conversation conv
// ("" when not known).
func (v *journalView) thread(id, conv string) bool {
	if v.sess.Profile == "" {
		return true
	}
	if ok, seen := v.threads[id]; seen {
		return ok
	}
	var ok bool
	if prof, live := v.s.pump.Threads().Profile(id); live {
		ok = within(prof, v.sess.Profile)
	} else if prof, known := v.recorded(id); known {
		ok = within(prof, v.sess.Profile)
	} else {
		ok = v.owned(cmp.Or(conv, id))
	}
	v.threads[id] = ok
	return ok
}

// recorded is the profile the journal recorded for thread id, and whether
// it recorded one: with its entries (the first that has one: the thread's
// first, but for entries journaled before profiles were), or with what retention kept of the
// pruned ones — so a thread retention pruned reads the same once it ended
// (its conversation completed, the TTL, a restart).
func (v *journalView) recorded(id string) (string, bool) {
	// The first entry says, unless it was journaled before the journal
	// recorded profiles: then a later one may.
	es, err := v.st.ThreadAfter(id, 0, 1)
	if err == nil && len(es) > 0 && es[0].ProfileUnknown {
		es, err = v.st.Thread(id)
	}
	if err != nil {
		return "", false
	}
	for _, e := range es {
		if !e.ProfileUnknown {
			return e.Profile, true
		}
	}
	pruned, err := v.st.PrunedOf(id)
	if err != nil {
		v.s.log.Error("journal pruned entries", "thread", id, "error", err)
		return "", false
	}
	for _, p := range pruned {
		if p.Thread == id && !p.NoMetadata && !p.ProfileUnknown {
			return p.Profile, true
		}
	}
	return "", false
}

// owned reports whether the user began conversation conv: the first
// journaled entry of its root thread is from one of their sessions.
func (v *journalView) owned(conv string) bool {
	if ok, seen := v.own[conv]; seen {
		return ok
	}
	ok := false
	if es, err := v.st.ThreadAfter(conv, 0, 1); err == nil && len(es) > 0 {
		ok = pump.Principal{User: v.sess.Username}.Owns(es[0].From)
	}
	v.own[conv] = ok
	return ok
}

// entries keeps the journal entries the user may see.
func (v *journalView) entries(entries []store.Entry) []store.Entry {
	if v.sess.Profile == "" {
		return entries
	}
	return slices.DeleteFunc(entries, func(e store.Entry) bool {
		visible := !e.ProfileUnknown && within(e.Profile, v.sess.Profile)
		if e.ProfileUnknown {
			visible = v.thread(e.Thread, e.Conversation)
		}
		return !visible || !v.s.namesVisible(v.sess, e.From, e.To, e.Listener)
	})
}

// positions keeps the journal positions — entries and pruned ones — the
// user may see, judged as entries are.
func (v *journalView) positions(ps []store.Position) []store.Position {
	if v.sess.Profile == "" {
		return ps
	}
	return slices.DeleteFunc(ps, func(p store.Position) bool {
		return len(v.entries([]store.Entry{p.Entry})) == 0
	})
}
