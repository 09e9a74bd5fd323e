package pump_test

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestNetworkWidened: a profile pinned before a change of the profile
// definitions is widened when the new definition of one of its terms
// allows an address the old one did not; narrowing, an unchanged list and
// removing the profile are not widening.
func TestNetworkWidened(t *testing.T) {
	none, anyAddr := []string{}, []string(nil)
	for _, tc := range []struct {
		name        string
		was, now    []string
		undefineNow bool
		want        string
	}{
		{name: "unchanged", was: []string{"example.com:443"}, now: []string{"example.com:443"}},
		{name: "none to one", was: none, now: []string{"example.com:443"}, want: "p"},
		{name: "none to any", was: none, now: anyAddr, want: "p"},
		{name: "one to any", was: []string{"example.com:443"}, now: anyAddr, want: "p"},
		{name: "any to one", was: anyAddr, now: []string{"example.com:443"}},
		{name: "narrowed", was: []string{"a.test:443", "b.test:443"}, now: []string{"a.test:443"}},
		{name: "another port", was: []string{"a.test:443"}, now: []string{"a.test:80"}, want: "p"},
		{name: "any port to one", was: []string{"a.test:*"}, now: []string{"a.test:80"}},
		{name: "one port to any", was: []string{"a.test:443"}, now: []string{"a.test:*"}, want: "p"},
		{name: "within a domain", was: []string{"*.example.com:443"}, now: []string{"api.example.com:443", "*.x.example.com:443"}},
		{name: "domain to its parent", was: []string{"*.example.com:443"}, now: []string{"example.com:443"}, want: "p"},
		{name: "name to its domain", was: []string{"api.example.com:443"}, now: []string{"*.example.com:443"}, want: "p"},
		{name: "all hosts", was: []string{"*:443"}, now: []string{"*.example.com:443", "10.0.0.1:443"}},
		{name: "to all hosts", was: []string{"10.0.0.1:443"}, now: []string{"*:443"}, want: "p"},
		{name: "same IP", was: []string{"[::1]:9000"}, now: []string{"[0:0::1]:9000"}},
		{name: "removed", was: none, undefineNow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPump(t, pump.Options{})
			if err := p.SetProfiles([]pump.ProfileDef{{Name: "p", Network: tc.was}, {Name: "q"}}); err != nil {
				t.Fatal(err)
			}
			pinned, pinnedBoth := p.Profile("p"), p.Profile("p&q")
			now := []pump.ProfileDef{{Name: "q"}}
			if !tc.undefineNow {
				now = append(now, pump.ProfileDef{Name: "p", Network: tc.now})
			}
			if err := p.SetProfiles(now); err != nil {
				t.Fatal(err)
			}
			if got := p.NetworkWidened(pinned); got != tc.want {
				t.Errorf("NetworkWidened(p) = %q, want %q", got, tc.want)
			}
			if got := p.NetworkWidened(pinnedBoth); got != tc.want {
				t.Errorf("NetworkWidened(p&q) = %q, want %q", got, tc.want)
			}
			if got := p.NetworkWidened(p.Profile("p")); got != "" {
				t.Errorf("NetworkWidened of the profile as now defined = %q", got)
			}
		})
	}
	if got := newPump(t, pump.Options{}).NetworkWidened(nil); got != "" {
		t.Errorf("NetworkWidened(nil) = %q", got)
	}
}
