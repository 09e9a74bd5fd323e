package oob

import (
	"fmt"
	"net/url"
	"strings"
)

// notRegistered is unregister-remote-gateway's answer for a URL no stored
// gateway dials. When a gateway of the organism's configuration dials it,
// the answer says so and what stops that one: a bare "no gateway" for the
// URL the organism visibly dials would leave the operator guessing.
func (o *operations) notRegistered(raw string) string {
	want, ok := dialTarget(raw)
	if !ok {
		return "no gateway " + raw
	}
	for _, gw := range o.t.config().Gateways {
		if got, ok := dialTarget(gw.RemoteURL); ok && got == want {
			return fmt.Sprintf("no gateway %s registered over OOB: gateway %s of the organism's configuration dials it, "+
				"and unregister-remote-gateway stops only gateways register-remote-gateway added "+
				"(take it out of the organism file and reload to stop it)", raw, gw.Name)
		}
	}
	return "no gateway " + raw
}

// dialTarget is the scheme and host:port a gateway URL dials, which two
// spellings of one address share (a trailing slash, upper case).
func dialTarget(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}
