package organism

import (
	"crypto/subtle"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// identityChanges reports the gateways of cfg's file whose trusted_identity
// file holds, now, another key than the running gateway of that name
// trusts (or none that reads), with their file:line. A gateway reads its
// peer's identity once, at the start: a reload after the peer's key was
// rotated and exported over the old file must not say it applied when the
// link goes on refusing the peer's new key. Like any other gateway key,
// the new identity applies at the next start.
func identityChanges(cfg *config.Organism, m *federation.Manager) []error {
	if m == nil {
		return nil
	}
	var errs []error
	for i, g := range cfg.Gateways {
		if g.TrustedKey != nil {
			continue // registered over OOB: its key is not in a file
		}
		trusted, ok := m.TrustedKey(g.Name)
		if !ok {
			continue
		}
		path := fmt.Sprintf("gateways[%d].trusted_identity", i)
		pub, err := keys.ReadPublic(g.TrustedIdentity)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %s: %w; the gateway keeps the identity it read at the start",
				cfg.Pos(path), path, err))
		case subtle.ConstantTimeCompare(pub, trusted) != 1:
			errs = append(errs, fmt.Errorf("%s: %s: %s holds another key than gateway %s trusts: "+
				"a peer's new identity applies only at the next start of the organism", cfg.Pos(path), path,
				g.TrustedIdentity, g.Name))
		}
	}
	return errs
}
