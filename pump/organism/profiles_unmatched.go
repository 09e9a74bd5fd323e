package organism

import (
	"fmt"
	"path"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// UnmatchedProfileNames warns of each name or glob in a profile's
// listeners: or a callable listener's requires: that matches no listener
// of the organism now, with its file:line: a misspelt name reaches
// nothing, silently. A federation import registers its listener when its
// gateway first links up, and a listener may be added while running, so a
// name may become legitimate later: this is a warning (`xmlpipe validate`
// prints them, and the organism's start and reloads log them), not an
// error.
func (o *Organism) UnmatchedProfileNames() []string {
	return unmatchedProfileNames(o.CurrentConfig(), o.Pump)
}

// unmatchedProfileNames is UnmatchedProfileNames for cfg and p's listeners.
func unmatchedProfileNames(cfg *config.Organism, p *pump.Pump) []string {
	var names []string
	for _, l := range p.Listeners() {
		names = append(names, strings.ToLower(l.Name))
	}
	matches := func(pattern string) bool {
		pattern = strings.ToLower(strings.TrimSpace(pattern))
		for _, n := range names {
			if ok, _ := path.Match(pattern, n); ok {
				return true
			}
		}
		return false
	}
	const later = "matches no listener (a federation import or a listener added while running may register it later)"
	var out []string
	for _, name := range cfg.ProfileNames() {
		for i, l := range cfg.Profiles[name].Listeners {
			if !matches(l) {
				at := fmt.Sprintf("profiles.%s.listeners[%d]", name, i)
				out = append(out, fmt.Sprintf("%s: %s: %q %s", cfg.Pos(at), at, l, later))
			}
		}
	}
	for i, lc := range cfg.Listeners {
		for j, r := range lc.Callable.Requires {
			if !matches(r) {
				at := fmt.Sprintf("listeners[%d].callable.requires[%d]", i, j)
				out = append(out, fmt.Sprintf("%s: %s: %q %s", cfg.Pos(at), at, r, later))
			}
		}
	}
	return out
}
