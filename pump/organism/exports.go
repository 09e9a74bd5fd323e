package organism

import (
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// UnservedExports lists, located as "file:line: …", each gateways[].export
// entry that no listener of the organism takes: the peer's calls to it are
// refused. An export is served by a listener whose payload root tag is the
// unqualified tag, or passed on to another gateway importing it; one a
// listener takes only in a namespace is named as such (only unqualified
// root tags cross a gateway). A tag may be meant for a listener added
// while running, so this is a warning (`xmlpipe validate` and the
// organism's start log it), not an error.
func (o *Organism) UnservedExports() []string {
	return unservedExports(o.CurrentConfig(), o.Pump)
}

func unservedExports(cfg *config.Organism, p *pump.Pump) []string {
	served := map[string]bool{}
	qualified := map[string][]string{} // the namespaces a local name is taken in
	for _, r := range p.Routes() {
		served[r.Tag] = true // qualified tags print as {ns}name: never an export
		if ns, local, ok := strings.Cut(strings.TrimPrefix(r.Tag, "{"), "}"); ok && strings.HasPrefix(r.Tag, "{") {
			qualified[local] = append(qualified[local], ns)
		}
	}
	for _, g := range cfg.Gateways {
		for _, tag := range g.Import {
			served[tag] = true
		}
	}
	var out []string
	for i, g := range cfg.Gateways {
		for j, tag := range g.Export {
			if served[tag] {
				continue
			}
			path := fmt.Sprintf("gateways[%d].export[%d]", i, j)
			if ns := qualified[tag]; len(ns) > 0 {
				out = append(out, fmt.Sprintf("%s: %s: <%s> is taken only in namespace %q, and only unqualified root tags "+
					"cross a gateway: gateway %s cannot import it, and its calls to it will be refused",
					cfg.Pos(path), path, tag, strings.Join(ns, `", "`), g.Name))
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s: no listener takes <%s>: gateway %s's calls to it will be refused",
				cfg.Pos(path), path, tag, g.Name))
		}
	}
	return out
}
