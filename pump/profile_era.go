package pump

import (
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
// (a listener name, a glob or an address added to its definition) would
// widen the thread's dispatch table, which is fixed when the thread is
// created. So every snapshot published after the pump started carries the
// history of what the profile definitions were — one era per change of
// them — and a thread's profile is resolved as the snapshot defines it
// narrowed by the definitions in force when the thread's conversation
// began: never wider than then. A narrowing applies to it at once.
//
// A listener registered after the conversation began (a federation import
// at its first link-up, a registration over OOB) is in the conversation's
// table when the definition it began with admits it, by name or by glob:
// the profile named it all along, and adding a listener changes no
// profile's definition. What only a widened definition admits stays out.
//
// The history is bounded: an era no conversation refers to — no live
// thread and no kept history was created in it — is dropped (pruneEras),
// so it holds at most one era per conversation alive plus the current one
// however often the organism reloads. With Options.ProfileEras it is
// recorded as it changes (once per change, never per message) and
// restored when the pump starts, so a restart keeps every restored
// conversation's narrowing; a start whose definitions differ from the last
// recorded ones (the configuration was edited while the organism was down)
// begins an era of its own.

// profileEra is what the profile definitions were from since on.
type profileEra struct {
	since    int64 // Unix nanoseconds on the thread registry's clock; math.MinInt64 for the first
	profiles map[string]*profileDef
	// defs are the definitions as given (what a ProfileEraJournal keeps).
	defs []ProfileDef
	// key is since as the journal recorded it (the first era may have been
	// rebased to math.MinInt64 since); recorded says whether it was.
	key      int64
	recorded bool
}

// eraKey caches a profile resolved in a snapshot under an older era.
type eraKey struct {
	name string
	era  *profileEra
}

// minErasPruned is how many eras a history holds before the pump looks
// for eras no conversation refers to (then again each time it doubled).
const minErasPruned = 16

// withEra records in nt, the snapshot that replaces old, the era it begins
// when its profile definitions differ from old's (p has started: the
// definitions installed before are the first era's). An edit that set
// nt.eras itself (restoreEras) is left alone. Callers hold routesMu.
func (p *Pump) withEra(old, nt *table) {
	if !p.started.Load() || nt.eras != nil {
		return
	}
	eras := old.eras
	if len(eras) == 0 {
		eras = []*profileEra{{since: math.MinInt64, key: math.MinInt64, profiles: old.profiles, defs: old.profileSrc}}
	}
	last := eras[len(eras)-1]
	if reflect.DeepEqual(nt.profiles, last.profiles) {
		nt.eras = eras
		return
	}
	now := p.opts.Clock().UnixNano()
	if now <= last.since {
		now = last.since + 1 // a clock that stood still or stepped back
	}
	e := &profileEra{since: now, key: now, profiles: nt.profiles, defs: nt.profileSrc}
	eras = append(slices.Clip(eras), e)
	if len(eras) > p.erasPruneAt {
		eras = p.pruneEras(eras)
		p.erasPruneAt = max(minErasPruned, 2*len(eras))
	}
	p.recordEras(eras)
	nt.eras = eras
}

// pruneEras returns eras without those no conversation refers to: an era
// other than the last in which no live thread and no kept history was
// created. The first one kept covers all time before it (nothing the
// dropped ones covered is referred to). Dropped eras are forgotten by the
// ProfileEraJournal too.
func (p *Pump) pruneEras(eras []*profileEra) []*profileEra {
	began := p.threads.CreatedTimes(nil)
	began = p.context.CreatedTimes(began)
	slices.Sort(began)
	kept := make([]*profileEra, 0, min(len(eras), len(began)+1))
	var dropped []int64
	for i, e := range eras {
		referred := i == len(eras)-1
		if !referred {
			j, _ := slices.BinarySearch(began, e.since)
			referred = j < len(began) && began[j] < eras[i+1].since
		}
		switch {
		case !referred:
			if e.recorded {
				dropped = append(dropped, e.key)
			}
		case len(kept) == 0 && e.since != math.MinInt64:
			kept = append(kept, &profileEra{since: math.MinInt64, key: e.key, recorded: e.recorded,
				profiles: e.profiles, defs: e.defs})
		default:
			kept = append(kept, e)
		}
	}
	if len(dropped) > 0 && p.opts.ProfileEras != nil {
		if err := p.opts.ProfileEras.DropProfileEras(eraTimes(dropped)); err != nil {
			p.log.Error("profiles: forgetting the eras no conversation refers to failed; they stay recorded",
				"eras", len(dropped), "err", err)
		}
	}
	return kept
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
// t.profile): a listener of t it reaches must also be matched by every
// term's definition in era — whenever it was registered; an address must
// be allowed by both. A term era did not define reaches nothing and dials
// nothing.
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
		if !slices.ContainsFunc(defs, func(d *profileDef) bool { return d == nil || !d.matches(l) }) {
			pr.allow[l] = struct{}{}
		}
	}
	v, _ := t.resolved.LoadOrStore(key, pr)
	return v.(*profile)
}
