package route

import "strings"

// Mask is the caller's allowed set (seed 000 §10.3: the dispatch table as a
// mask over the ranked candidates): it reports whether the caller may use
// the listener called name. Today the caller supplies it — an agent's
// peers (organism.Organism.PeersMask), a user's visible listeners; profiles
// plug in here (organism.Organism.ProfileMask). A nil Mask allows every
// capability in the index (the organism's one implicit profile).
type Mask func(name string) bool

// Allows reports whether m allows name (a nil Mask allows everything).
func (m Mask) Allows(name string) bool { return m == nil || m(name) }

// Allow returns the Mask of exactly names, compared case-insensitively as
// routing compares listener names.
func Allow(names ...string) Mask {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[strings.ToLower(n)] = true
	}
	return func(name string) bool { return set[strings.ToLower(name)] }
}

// Deny returns the Mask of every name but names.
func Deny(names ...string) Mask {
	allow := Allow(names...)
	return func(name string) bool { return !allow(name) }
}

// Both returns the Mask allowing what both a and b allow (nil allows all):
// the narrower of two masks, never the wider.
func Both(a, b Mask) Mask {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(name string) bool { return a(name) && b(name) }
}
