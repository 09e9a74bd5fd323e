package organism

import (
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/route"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
)

// profileDefs returns the pump's profile definitions of cfg: its profiles:
// section, and for every callable listener the implicit profile its
// requires: list defines (config.CallProfile). nil when there are none.
func profileDefs(cfg *config.Organism) []pump.ProfileDef {
	var defs []pump.ProfileDef
	for _, name := range cfg.ProfileNames() {
		p := cfg.Profiles[name]
		defs = append(defs, pump.ProfileDef{Name: name, Listeners: p.Listeners, Network: p.Network.Allowed()})
	}
	for _, lc := range cfg.Listeners {
		if !lc.Callable.IsZero() {
			defs = append(defs, pump.ProfileDef{Name: config.CallProfile(lc.Name),
				Listeners: append([]string{lc.Name}, lc.Callable.Requires...)})
		}
	}
	return defs
}

// installProfiles puts cfg's profiles in force in p (before Start).
func installProfiles(p *pump.Pump, cfg *config.Organism) error {
	if err := p.SetProfiles(profileDefs(cfg)); err != nil {
		return fmt.Errorf("%s: %w", cfg.Pos("profiles"), err)
	}
	return nil
}

// ProfileMask returns the routing mask of the profile called name (one
// profile, or several joined by "&": their intersection) in the routing
// table in force: the listeners a thread under it reaches. "" is no
// profile: a nil mask (every listener). A name the organism does not
// define is an error wrapping ErrUnknownProfile.
func (o *Organism) ProfileMask(name string) (route.Mask, error) {
	if name == "" {
		return nil, nil
	}
	cfg := o.CurrentConfig()
	if len(cfg.Profiles) == 0 {
		return nil, fmt.Errorf("%w %q: this organism defines no profiles (a profiles: section is needed)", ErrUnknownProfile, name)
	}
	// Profile names are keys, matched exactly as the configuration and
	// the users' records name them: a term in another case is no profile.
	// A name of no term at all (" ", "&") is none either: under it a
	// message would run with no profile, reaching every listener.
	terms := 0
	for term := range strings.SplitSeq(name, registry.ProfileSep) {
		if term = strings.TrimSpace(term); term == "" {
			continue
		}
		terms++
		if _, ok := cfg.Profiles[term]; !ok || !o.Pump.ProfileDefined(term) {
			return nil, fmt.Errorf("%w %q%s (profiles: %s)", ErrUnknownProfile, term, cfg.ProfileHint(term),
				strings.Join(cfg.ProfileNames(), ", "))
		}
	}
	if terms == 0 {
		return nil, fmt.Errorf("%w %q (profiles: %s)", ErrUnknownProfile, name, strings.Join(cfg.ProfileNames(), ", "))
	}
	return route.Mask(func(listener string) bool { return o.Pump.ProfileReaches(name, listener) }), nil
}

// VisibleTo returns the mask of what a party under profile name may see of
// the organism — its listings, its introspection, its tools: the
// listeners the profile reaches. Unlike ProfileMask it never fails: a
// profile the organism does not define sees nothing (fail closed), and ""
// sees everything (nil).
func (o *Organism) VisibleTo(name string) route.Mask {
	if name == "" {
		return nil
	}
	return func(listener string) bool { return o.Pump.ProfileReaches(name, listener) }
}
