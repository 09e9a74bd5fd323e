package organism

import (
	"context"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
)

// warnUserProfiles logs, for every user of a durable organism whose
// profile cfg does not define, that the user now reaches none of the
// organism's listeners: an undefined profile fails closed, so a start or a
// reload that drops a profile users still carry would otherwise lock them
// out without a word. `users profile` sets another.
func (o *Organism) warnUserProfiles(cfg *config.Organism) {
	s := o.Store()
	if s == nil {
		return
	}
	users, err := s.ListUsers(context.Background())
	if err != nil {
		o.log.Warn("users' profiles not checked", "error", err)
		return
	}
	for _, u := range users {
		if u.Profile == "" {
			continue
		}
		if i := slices.IndexFunc(registry.ProfileTerms(u.Profile), func(term string) bool {
			_, ok := cfg.Profiles[term]
			return !ok
		}); i >= 0 {
			o.log.Warn("a user's profile is not defined: their conversations reach none of the organism's listeners "+
				"(set another with xmlpipe users profile)", "user", u.Name, "profile", u.Profile,
				"profiles", strings.Join(cfg.ProfileNames(), ", "))
		}
	}
}
