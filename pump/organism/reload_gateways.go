package organism

import (
	"fmt"
	"reflect"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// gatewayReloadLimit bounds a reload's stopping of the gateways it removes
// or changes (each waits for its calls to end, 2 s at most, and for its
// imported listeners to go).
const gatewayReloadLimit = 30 * time.Second

// planGateways checks the gateways of cfg (those registered over OOB
// appended) against the running ones: what a reload adds, removes and
// changes, every trusted_identity read now — one that does not read, or
// a peer trusted twice, refuses the reload with its file:line. A gateway
// whose trusted_identity file holds another key than it trusts (the
// peer's identity rotated) is changed: it relinks trusting the new key.
// Without a federation (no identity at the start) a change of gateways
// applies only at the next start.
func (o *Organism) planGateways(old, cfg *config.Organism) (*federation.GatewayChange, error) {
	if o.Federation == nil {
		if !reflect.DeepEqual(fileGateways(old.Gateways), fileGateways(cfg.Gateways)) {
			return nil, fmt.Errorf("%s: gateways changed: this organism started without federation (no identity: "+
				"xmlpipe keys init, or no data directory), so they apply only at its next start", cfg.Pos("gateways"))
		}
		return nil, nil
	}
	return o.Federation.PlanGateways(cfg.Gateways, func(i int, field string) string {
		path := fmt.Sprintf("gateways[%d].%s", i, field)
		return fmt.Sprintf("%s: %s", cfg.Pos(path), path)
	})
}
