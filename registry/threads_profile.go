package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A thread's security profile (seed 000 §5.3, §8.4) is held with the thread
// as an opaque name: "" for none (the organism's one implicit profile, with
// every listener), else one or more profile names joined by "&" — the
// intersection of those profiles. The registry does not know what a profile
// allows; it guarantees the two invariants that depend only on the names:
//
//   - No Runtime Downgrade (§8.5): a thread's profile is fixed when the
//     thread is created; nothing changes it afterwards.
//   - Profile Monotonicity (§5.5): a child thread's profile is its parent's
//     narrowed by what the child asks for (NarrowProfile): every profile its
//     parent's name holds, plus the ones asked for. An intersection with more
//     terms allows no more than one with fewer, so no child can be wider than
//     its parent, whatever it asks for.

// profileName is what one profile may be called: no "&" (it joins an
// intersection's terms), no spaces, no upper case.
var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// ValidProfileName reports whether name may name a profile: lower-case
// letters, digits, '_', '.' and '-', starting with a letter or a digit.
func ValidProfileName(name string) bool { return profileName.MatchString(name) }

// ValidProfileTerm reports whether name may be a term of a thread's
// profile name: non-empty, lower-case, without "&" or white space. Every
// ValidProfileName is one; the organism's implicit profiles
// ("callable:<listener>") are others.
func ValidProfileTerm(name string) bool {
	return name != "" && name == strings.ToLower(name) && !strings.ContainsFunc(name, func(r rune) bool {
		return r == '&' || unicode.IsSpace(r)
	})
}

// ProfileSep joins the profiles of an intersection in a thread's profile
// name.
const ProfileSep = "&"

// NarrowProfile returns the profile of a thread whose parent has profile
// parent and which asks for want: the intersection of both, as a canonical
// name (lower-cased profile names, each once, sorted, joined by "&"). ""
// stands for no restriction, so NarrowProfile("", want) is want's canonical
// form and NarrowProfile(parent, "") parent's. Empty terms ("a&&b") are
// dropped.
func NarrowProfile(parent, want string) string {
	if want == "" {
		if canonicalProfile(parent) {
			return parent
		}
		return narrow(parent, "")
	}
	if parent == "" && canonicalProfile(want) {
		return want
	}
	return narrow(parent, want)
}

// narrow is NarrowProfile's slow path: split, lower, sort, dedup, join.
func narrow(a, b string) string {
	var terms []string
	for _, s := range []string{a, b} {
		for t := range strings.SplitSeq(s, ProfileSep) {
			if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
				terms = append(terms, t)
			}
		}
	}
	slices.Sort(terms)
	return strings.Join(slices.Compact(terms), ProfileSep)
}

// canonicalProfile reports whether name is already in NarrowProfile's
// form. It allocates nothing.
func canonicalProfile(name string) bool {
	prev, rest := "", name
	for first := true; rest != "" || first; first = false {
		var t string
		t, rest, _ = strings.Cut(rest, ProfileSep)
		if t == "" && name != "" || t != strings.TrimSpace(t) || !first && t <= prev {
			return false
		}
		for i := 0; i < len(t); i++ {
			if 'A' <= t[i] && t[i] <= 'Z' || t[i] >= 0x80 && t != strings.ToLower(t) {
				return false
			}
		}
		prev = t
	}
	return !strings.HasSuffix(name, ProfileSep)
}

// ProfileTerms returns the profile names an intersection holds, in order
// (none for "").
func ProfileTerms(profile string) []string {
	if profile == "" {
		return nil
	}
	return strings.Split(NarrowProfile(profile, ""), ProfileSep)
}

// JoinAs is Join for a message sent under a profile: a new conversation's
// root gets profile (in NarrowProfile's form); a live thread keeps its own.
// It also returns the thread's profile.
func (t *Threads) JoinAs(id, from, target, profile string) (root string, created bool, threadProfile string, err error) {
	root, created, threadProfile, err = t.joinAs("join", id, from, target, NarrowProfile("", profile), 0)
	return root, created, threadProfile, err
}

// ExtendAs is ExtendRef for a child that asks for profile want: the child's
// profile is NarrowProfile(its parent's, want) — never wider than the
// parent's. It returns the child's id and profile.
func (t *Threads) ExtendAs(id, to, ref, want string) (child, profile string, err error) {
	return t.extend(id, to, ref, want)
}

// Profile returns the profile of live thread id ("" for none) and whether
// id is live.
func (t *Threads) Profile(id string) (string, bool) {
	u, err := parseThreadID(id)
	if err != nil {
		return "", false
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return "", false
	}
	return s.segs.name(s.slab.at(r).profile), true
}

// Created returns when live thread id was created (on the registry's
// clock, in Unix nanoseconds) and whether id is live: what a profile's
// definitions were then decides what its thread may reach (seed 000 §8.5).
func (t *Threads) Created(id string) (int64, bool) {
	u, err := parseThreadID(id)
	if err != nil {
		return 0, false
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return 0, false
	}
	return s.slab.at(r).created, true
}

// CallerAs is CallerRef that also returns the profile of the reply thread:
// what an answer travelling back from id travels under.
func (t *Threads) CallerAs(id string) (caller, replyThread, ref, profile string, err error) {
	u, perr := parseThreadID(id)
	if perr != nil {
		return "", "", "", "", fmt.Errorf("registry: caller %q: %w", id, ErrUnknownThread)
	}
	s, r := t.rlock(u)
	defer s.mu.RUnlock()
	if r == 0 {
		return "", "", "", "", fmt.Errorf("registry: caller %s: %w", id, ErrUnknownThread)
	}
	if caller, replyThread, err = s.callerOf(r, id); err != nil {
		return "", "", "", "", fmt.Errorf("registry: caller %s: %w", id, err)
	}
	n := s.slab.at(r)
	prof := n.profile
	if n.parent != 0 {
		prof = s.slab.at(n.parent).profile
	}
	return caller, replyThread, s.refs[r], s.segs.name(prof), nil
}

// setProfile gives node r the profile name profile ("" keeps none); a
// node's profile is set once, when it is created. Callers hold s.mu.
func (s *threadShard) setProfile(r nodeRef, profile string) {
	if profile == "" {
		return
	}
	s.slab.at(r).profile = s.segs.intern(profile)
}
