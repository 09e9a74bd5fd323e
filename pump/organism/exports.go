package organism

import (
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
)

// UnservedExports lists, located as "file:line: …", each gateways[].export
// entry whose calls from the peer are refused: one no listener of the
// organism takes, or one whose listeners the gateway's profile: does not
// reach — including a callable's call (<Name>Call) whose callable the
// profile leaves out, so that every call fails. An export is served by a
// listener whose payload root tag is the unqualified tag, or passed on to
// another gateway importing it; one a listener takes only in a namespace
// is named as such (only unqualified root tags cross a gateway). A tag may
// be meant for a listener added while running, so this is a warning
// (`xmlpipe validate` and the organism's start log it), not an error.
func (o *Organism) UnservedExports() []string {
	return unservedExports(o.CurrentConfig(), o.Pump)
}

func unservedExports(cfg *config.Organism, p *pump.Pump) []string {
	takers := map[string][]string{}    // the listeners taking an unqualified tag
	qualified := map[string][]string{} // the namespaces a local name is taken in
	for _, r := range p.Routes() {
		if ns, local, ok := strings.Cut(strings.TrimPrefix(r.Tag, "{"), "}"); ok && strings.HasPrefix(r.Tag, "{") {
			qualified[local] = append(qualified[local], ns)
			continue
		}
		takers[r.Tag] = append(takers[r.Tag], r.Listeners...)
	}
	passed := map[string]bool{} // tags another gateway imports
	for _, g := range cfg.Gateways {
		for _, tag := range g.Import {
			passed[tag] = true
		}
	}
	var out []string
	for i, g := range cfg.Gateways {
		for j, tag := range g.Export {
			path := fmt.Sprintf("gateways[%d].export[%d]", i, j)
			switch {
			case passed[tag]:
			case len(takers[tag]) > 0:
				if w := unreachedExport(cfg, p, g, tag, takers[tag]); w != "" {
					out = append(out, fmt.Sprintf("%s: %s: %s", cfg.Pos(path), path, w))
				}
			case len(qualified[tag]) > 0:
				out = append(out, fmt.Sprintf("%s: %s: <%s> is taken only in namespace %q, and only unqualified root tags "+
					"cross a gateway: gateway %s cannot import it, and its calls to it will be refused",
					cfg.Pos(path), path, tag, strings.Join(qualified[tag], `", "`), g.Name))
			default:
				out = append(out, fmt.Sprintf("%s: %s: no listener takes <%s>: gateway %s's calls to it will be refused",
					cfg.Pos(path), path, tag, g.Name))
			}
		}
	}
	return out
}

// unreachedExport says why gateway g's calls of tag, which listeners take,
// cannot succeed under g's profile: the profile reaches none of them, or
// the one it reaches is a callable's call whose callable it does not reach
// (a call runs under the caller's profile narrowed by the callable's). ""
// when they can, or g has no profile.
func unreachedExport(cfg *config.Organism, p *pump.Pump, g config.Gateway, tag string, listeners []string) string {
	if g.Profile == "" {
		return ""
	}
	var reached []string
	for _, l := range listeners {
		if p.ProfileReaches(g.Profile, l) {
			reached = append(reached, l)
		}
	}
	if len(reached) == 0 {
		return fmt.Sprintf("gateway %s's profile %s does not reach %s, which takes <%s>: its calls to it will be refused",
			g.Name, g.Profile, strings.Join(listeners, ", "), tag)
	}
	for _, l := range reached {
		target, ok := callTarget(cfg, l)
		if !ok || p.ProfileReaches(registry.NarrowProfile(g.Profile, config.CallProfile(target)), target) {
			return ""
		}
	}
	target, _ := callTarget(cfg, reached[0])
	return fmt.Sprintf("gateway %s's profile %s reaches %s but not %s, which its calls of <%s> run: every call will fail",
		g.Name, g.Profile, reached[0], target, tag)
}

// callTarget returns the callable listener whose call listener is name
// (config.CallName), if name is one.
func callTarget(cfg *config.Organism, name string) (string, bool) {
	for _, lc := range cfg.Listeners {
		if !lc.Callable.IsZero() && strings.EqualFold(config.CallName(lc.Name), name) {
			return lc.Name, true
		}
	}
	return "", false
}
