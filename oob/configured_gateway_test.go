package oob

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestUnregisterConfiguredGatewaySaysWhatStopsIt: unregister-remote-gateway
// for the URL a gateway of organism.yaml dials cannot stop that gateway;
// the NOT_FOUND answer says which gateway dials it and what stops it,
// whichever spelling of the URL the operator used, instead of a bare "no
// gateway" for a URL the organism visibly dials.
func TestUnregisterConfiguredGatewaySaysWhatStopsIt(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		c := *o.Target.Config
		c.Gateways = append([]config.Gateway{}, c.Gateways...)
		c.Gateways = append(c.Gateways, config.Gateway{Name: "b", RemoteURL: "wss://127.0.0.1:8767"})
		o.Target.Config = &c
	})
	configured := "gateway b of the organism's configuration dials it, and unregister-remote-gateway stops only " +
		"gateways register-remote-gateway added (take it out of the organism file and reload to stop it)"
	for _, tc := range []struct{ url, want string }{
		{"wss://127.0.0.1:8767", "no gateway wss://127.0.0.1:8767 registered over OOB: " + configured},
		{"WSS://127.0.0.1:8767/", "no gateway WSS://127.0.0.1:8767/ registered over OOB: " + configured},
		{"wss://127.0.0.1:9999", "no gateway wss://127.0.0.1:9999"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			r := f.do(t, `<unregister-remote-gateway><url>`+tc.url+`</url></unregister-remote-gateway>`)
			if got := code(r); got != CodeNotFound {
				t.Fatalf("code %q, want %s", got, CodeNotFound)
			}
			if d := cmp.Diff(tc.want, r.Payload.Error.Message); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
		})
	}
}
