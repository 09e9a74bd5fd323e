package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// toolbox is what an agent offers its model as functions: every peer with a
// payload contract, and the agent's local tools. It maps function names
// (valid for every provider: ^[a-zA-Z0-9_-]{1,64}$) to what they call and
// back. It is built from one peer list and never changes; the agent builds
// a new one when its peers do.
type toolbox struct {
	// src is the peer list it was built from (Metadata.Peers).
	src []xmlpipe.Peer
	// specs are the functions offered, locals first, then peers in their
	// peers-list order.
	specs []ToolSpec
	// byFunc maps a function name to its tool: a model's call back to the
	// peer it names (funcName and the collision rule map the other way).
	byFunc map[string]*boxTool
	// unoffered are peers without a payload contract (not registered, or
	// out of the conversation's profile): they cannot be called as functions.
	unoffered []string
}

// boxTool is one function of a toolbox: a peer, or a local tool.
type boxTool struct {
	fn    string
	peer  xmlpipe.Peer // when local is nil
	local *LocalTool
}

// maxFuncName is every provider's limit on a function name's length.
const maxFuncName = 64

// funcName maps a listener name to a function name every provider takes:
// each character outside [a-zA-Z0-9_-] becomes '_' (weather.forecast →
// weather_forecast); a name longer than 64 characters keeps its first 55
// and a hash of the whole. Collisions are settled by the toolbox.
func funcName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	switch {
	case s == "":
		return "tool_" + nameHash(name)
	case len(s) > maxFuncName:
		return s[:maxFuncName-9] + "_" + nameHash(name)
	}
	return s
}

// nameHash is 8 hex digits of a name's SHA-256: a stable suffix that tells
// names apart.
func nameHash(name string) string {
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:4])
}

// withHash returns base with name's hash appended, within 64 characters.
func withHash(base, name string) string {
	if len(base) > maxFuncName-9 {
		base = base[:maxFuncName-9]
	}
	return base + "_" + nameHash(name)
}

// buildToolbox offers locals and peers as functions (but the peers a local
// tool names in Sends, which only that tool reaches). Local tools keep their
// names (they must be valid and distinct; an invalid or duplicate one is
// left out with a note in the error). Peers are mapped by funcName; when two
// map to one name, a peer whose name is the function name as is keeps it,
// then the peers in name order, and the others get funcName plus a hash of
// their name — so the mapping depends on the set of peers, not on their
// order, and stays the same across restarts.
func buildToolbox(peers []xmlpipe.Peer, locals []LocalTool) (*toolbox, error) {
	b := &toolbox{src: peers, byFunc: map[string]*boxTool{}}
	var problems []string
	hidden := map[string]bool{} // peers reached through a local tool only
	for i := range locals {
		for _, n := range locals[i].Sends {
			hidden[strings.ToLower(n)] = true
		}
	}
	for i := range locals {
		lt := &locals[i]
		name := lt.Spec.Name
		switch {
		case !toolName.MatchString(name):
			problems = append(problems, fmt.Sprintf("local tool %q: name must match ^[a-zA-Z0-9_-]{1,64}$", name))
			continue
		case b.byFunc[name] != nil:
			problems = append(problems, fmt.Sprintf("local tool %q offered twice", name))
			continue
		}
		b.byFunc[name] = &boxTool{fn: name, local: lt}
		b.specs = append(b.specs, lt.Spec)
	}
	type candidate struct {
		peer xmlpipe.Peer
		base string
	}
	var cands []candidate
	seen := map[string]bool{}
	for _, p := range peers {
		key := strings.ToLower(p.Name)
		if seen[key] || hidden[key] {
			continue
		}
		seen[key] = true
		if p.Payload == nil {
			b.unoffered = append(b.unoffered, p.Name)
			continue
		}
		cands = append(cands, candidate{peer: p, base: funcName(p.Name)})
	}
	// Who keeps a contested name: exact names first, then by name.
	order := slices.Clone(cands)
	slices.SortStableFunc(order, func(x, y candidate) int {
		xe, ye := x.base == x.peer.Name, y.base == y.peer.Name
		switch {
		case xe && !ye:
			return -1
		case ye && !xe:
			return 1
		}
		return strings.Compare(x.peer.Name, y.peer.Name)
	})
	assigned := map[string]string{}
	for _, c := range order {
		fn := c.base
		if b.byFunc[fn] != nil {
			fn = withHash(c.base, c.peer.Name)
		}
		assigned[c.peer.Name] = fn
		b.byFunc[fn] = &boxTool{fn: fn, peer: c.peer}
	}
	for _, c := range cands { // specs in peers-list order
		fn := assigned[c.peer.Name]
		params, err := json.Marshal(gen.JSONSchema(c.peer.Payload.Model()))
		if err != nil {
			problems = append(problems, fmt.Sprintf("peer %s: parameters: %v", c.peer.Name, err))
			delete(b.byFunc, fn)
			continue
		}
		b.specs = append(b.specs, ToolSpec{Name: fn, Description: peerDescription(c.peer, fn), Parameters: params})
	}
	if len(problems) > 0 {
		return b, fmt.Errorf("llm: toolbox: %s", strings.Join(problems, "; "))
	}
	return b, nil
}

// peerDescription is the function description of a peer: its listener
// description, naming the listener when the function name differs.
func peerDescription(p xmlpipe.Peer, fn string) string {
	d := strings.TrimSpace(p.Description)
	if d == "" {
		d = "Send a message to " + p.Name + " and get its answer."
	}
	if fn != p.Name {
		d = p.Name + ": " + d
	}
	return d
}

// sameSource reports whether peers is the list b was built from.
func (b *toolbox) sameSource(peers []xmlpipe.Peer) bool {
	return slices.EqualFunc(b.src, peers, func(x, y xmlpipe.Peer) bool {
		return x.Name == y.Name && x.Payload == y.Payload && x.Description == y.Description
	})
}

// names lists the offered function names, for a message to the model.
func (b *toolbox) names() string {
	ns := make([]string, len(b.specs))
	for i, s := range b.specs {
		ns[i] = s.Name
	}
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}
