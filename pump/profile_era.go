package pump

import (
	"maps"
	"math"
	"reflect"
	"slices"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// Profile eras (seed 000 §8.5, §12.4).
//
// A conversation routes within the routing snapshot it began with while it
// is in flight (convState.tbl). Once a turn completes that pin is dropped,
// and the next message on the conversation's thread — a user's next line
// to an agent, a client's continuation — routes within the snapshot in
// force then. A reload between the two that widened the thread's profile
// (a listener or an address added to its definition, a listener added
// that one of its globs matches) would widen the thread's dispatch table,
// which is fixed when the thread is created. So every snapshot published
// after the pump started carries the history of what its profiles were —
// one era per change of the definitions or of the listeners' names — and
// a thread's profile is resolved as the snapshot defines it narrowed by
// the era in force when the thread's conversation began: never wider than
// then. A narrowing applies to it at once.
//
// The eras live in memory: a restart resolves every restored thread's
// profile as the organism's configuration then defines it.

// profileEra is what the profiles were from since on: their definitions
// and the names of the listeners there were.
type profileEra struct {
	since    int64 // Unix nanoseconds on the thread registry's clock; math.MinInt64 for the first
	profiles map[string]*profileDef
	names    map[string]struct{} // lower-cased
}

// eraKey caches a profile resolved in a snapshot under an older era.
type eraKey struct {
	name string
	era  *profileEra
}

// withEra records in nt, the snapshot that replaces old, the era it begins
// when its profiles or listeners' names differ from old's (p has started:
// the listeners registered before the first message are the first era's).
func (p *Pump) withEra(old, nt *table) {
	if !p.started.Load() {
		return
	}
	eras := old.eras
	if len(eras) == 0 {
		eras = []*profileEra{{since: math.MinInt64, profiles: old.profiles, names: namesOf(old)}}
	}
	last := eras[len(eras)-1]
	names := namesOf(nt)
	sameNames, sameDefs := maps.Equal(names, last.names), reflect.DeepEqual(nt.profiles, last.profiles)
	if sameNames && sameDefs {
		nt.eras = eras
		return
	}
	e := &profileEra{since: p.opts.Clock().UnixNano(), profiles: nt.profiles, names: names}
	if sameNames {
		e.names = last.names
	}
	if sameDefs {
		e.profiles = last.profiles
	}
	nt.eras = append(slices.Clip(eras), e)
}

// namesOf returns the lower-cased names of t's listeners.
func namesOf(t *table) map[string]struct{} {
	out := make(map[string]struct{}, len(t.order))
	for _, l := range t.order {
		out[lower(l.Name)] = struct{}{}
	}
	return out
}

// eraAt returns the era in force at created in t's history when it is
// older than t's own (nil: t's own, or t has no history).
func (t *table) eraAt(created int64) *profileEra {
	if len(t.eras) < 2 {
		return nil
	}
	i, _ := slices.BinarySearchFunc(t.eras, created, func(e *profileEra, at int64) int {
		if e.since <= at {
			return -1
		}
		return 1
	})
	// i is the first era begun after created: the one before it was in force.
	if i == 0 || i == len(t.eras) {
		return nil
	}
	return t.eras[i-1]
}

// profileIn resolves the profile called name for a message of the
// conversation whose thread is thread (its root, or the message's own when
// the conversation is not known yet): as t defines it, narrowed by the era
// in force when the conversation began (began).
func (p *Pump) profileIn(t *table, thread, name string) *profile {
	if name == "" || len(t.eras) < 2 {
		return t.profile(name)
	}
	created, ok := p.began(thread)
	if !ok {
		return t.profile(name)
	}
	return t.profileAt(name, t.eraAt(created))
}

// began returns when the conversation on thread began (Unix nanoseconds):
// when its history began — a continued conversation's thread is begun
// again under its old id at each of its turns (continuation.go) — or when
// the thread was created, whichever is older; false when neither is known.
func (p *Pump) began(thread string) (int64, bool) {
	created, live := p.threads.Created(thread)
	if tc, kept := p.context.Thread(thread); kept {
		if at := tc.Created().UnixNano(); !live || at < created {
			return at, true
		}
	}
	return created, live
}

// eraOf is the era pr is narrowed by (nil: none, or pr is nil).
func (pr *profile) eraOf() *profileEra {
	if pr == nil {
		return nil
	}
	return pr.era
}

// profileAt resolves the profile called name in t narrowed by era (nil:
// t.profile): a listener of t it reaches must also have been there in era
// and matched by every term's definition then; an address must be allowed
// by both. A term era did not define reaches nothing and dials nothing.
func (t *table) profileAt(name string, era *profileEra) *profile {
	if era == nil || name == "" {
		return t.profile(name)
	}
	key := eraKey{name: name, era: era}
	if v, ok := t.resolved.Load(key); ok {
		return v.(*profile)
	}
	now := t.profile(name)
	pr := &profile{name: now.name, tbl: t, era: era, allow: make(map[*listener]struct{}, len(now.allow)),
		network: slices.Clone(now.network)}
	terms := registry.ProfileTerms(name)
	defs := make([]*profileDef, len(terms))
	for i, term := range terms {
		defs[i] = era.profiles[term]
		switch {
		case defs[i] == nil:
			pr.network = append(pr.network, []netRule{})
		case defs[i].network != nil:
			pr.network = append(pr.network, defs[i].network)
		}
	}
	for l := range now.allow {
		if _, ok := era.names[lower(l.Name)]; !ok {
			continue
		}
		if !slices.ContainsFunc(defs, func(d *profileDef) bool { return d == nil || !d.matches(l) }) {
			pr.allow[l] = struct{}{}
		}
	}
	v, _ := t.resolved.LoadOrStore(key, pr)
	return v.(*profile)
}
