package config

import "fmt"

// Warnings lists, located as "file:line: path: …", what in a valid
// configuration will not do what its Python reading suggests, with what to
// write instead. `xmlpipe validate` prints them and the organism logs them at
// start; none stops it.
//
// A handler agent (agent: true with a compiled-in handler) without peers
// or tools: the Python server enforced peers only for an agent whose list
// was non-empty, so such an agent sent anywhere; here an agent reaches only
// its peers, and every forward of its handler would be refused as a peer
// violation. An LLM agent without handler and peers only answers its
// caller, which needs none, so it is not warned of.
func (o *Organism) Warnings() []string {
	var out []string
	for i, l := range o.Listeners {
		if !l.Agent || l.Handler == "" || l.Type != GoListener || len(l.Peers) > 0 || len(l.Tools) > 0 {
			continue
		}
		path := childIndex("listeners", i)
		out = append(out, fmt.Sprintf("%s: %s: agent %s has a handler but no peers: an agent may send only to the "+
			"listeners its peers name (the Python server let an agent without peers send anywhere), so every message "+
			"its handler sends to another listener is refused as a peer violation; list the listeners it sends to "+
			"under peers:, or remove agent: true if it is no LLM agent", o.Pos(path), path, l.Name))
	}
	return out
}
