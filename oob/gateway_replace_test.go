package oob

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeGateways is a GatewayRunner that refuses the identities in refuse
// and records which gateways run, by URL.
type fakeGateways struct {
	mu      sync.Mutex
	running map[string]string // URL → identity
	refuse  map[string]bool
}

func (f *fakeGateways) AddGateway(g RegisterRemoteGateway) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse[g.Identity] {
		return errors.New("refused")
	}
	f.running[g.URL] = g.Identity
	return nil
}

func (f *fakeGateways) RemoveGateway(_ context.Context, url string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, url)
	return nil
}

// TestRefusedReRegistrationKeepsGateway: registering a gateway again for
// the same URL replaces it, but a re-registration that is refused leaves
// the gateway registered before running (and stored), instead of stopping
// it while the store still names it.
func TestRefusedReRegistrationKeepsGateway(t *testing.T) {
	gws := &fakeGateways{running: map[string]string{}, refuse: map[string]bool{"AQID": true}}
	f := newFixture(t, func(o *Options) { o.Target.Gateways = gws })
	register := func(identity string) string {
		return `<register-remote-gateway><url>wss://peer.example.org:8767</url><identity>` + identity +
			`</identity><import-tags><tag>Search</tag></import-tags></register-remote-gateway>`
	}
	steps := []struct {
		identity string
		code     string
		running  map[string]string
	}{
		{"AAAA", "", map[string]string{"wss://peer.example.org:8767": "AAAA"}},
		{"AQID", CodeInvalidArgument, map[string]string{"wss://peer.example.org:8767": "AAAA"}},
		{"BAUG", "", map[string]string{"wss://peer.example.org:8767": "BAUG"}},
	}
	for _, s := range steps {
		r := f.do(t, register(s.identity))
		if got := code(r); got != s.code {
			t.Fatalf("registering %s: code %q, want %q", s.identity, got, s.code)
		}
		gws.mu.Lock()
		running := maps.Clone(gws.running)
		gws.mu.Unlock()
		if d := cmp.Diff(s.running, running); d != "" {
			t.Fatalf("after registering %s, running (-want +got):\n%s", s.identity, d)
		}
		stored, err := ReadGateways(f.srv.opts.Target.GatewayFile)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 1 || stored[0].Identity != s.running["wss://peer.example.org:8767"] {
			t.Fatalf("after registering %s, stored %+v", s.identity, stored)
		}
	}
}
