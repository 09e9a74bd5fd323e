package federation

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestExportsChangedRefreshesImports: the peer's exports change while the
// link stays up (it reloaded: a listener's schema changed, another export
// is new). The peer tells this side so (ExportsChanged, a signed envelope
// on the live link), and this side asks again for its imports at once —
// the imported listener takes the new schema, the import that was missing
// arrives — without waiting for the next link.
func TestExportsChangedRefreshesImports(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	meta := &exportsMeta{}
	c.m.opts.Meta = meta
	v1 := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD("")}
	v2 := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD(`
      <xs:element name="Loud" type="xs:boolean" minOccurs="0"/>`)}
	meta.set(v1)

	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Store: openStore(t, t.TempDir(), log),
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key),
			Import: []string{"Echo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	m.importPause = time.Hour // only the peer's word asks again
	refreshed := make(chan error, 8)
	m.onRefresh = func(_ string, err error) { refreshed <- err }
	m.Start()
	waitRefresh := func(what string) {
		t.Helper()
		select {
		case <-refreshed:
		case <-time.After(60 * time.Second):
			t.Fatal(what)
		}
	}
	waitRefresh("the first link never fetched the imports")
	schemaOf := func(name string) string {
		l, ok := p.Lookup(name)
		if !ok {
			return ""
		}
		return string(l.Payload.XSD())
	}
	if d := cmp.Diff(string(v1.XSD), schemaOf("echo")); d != "" {
		t.Fatalf("echo after the first link (-want +got):\n%s", d)
	}
	m.gateways[0].mu.Lock()
	link := m.gateways[0].conn
	m.gateways[0].mu.Unlock()

	meta.set(v2)
	c.m.ExportsChanged()
	waitRefresh("the peer's word did not refresh the imports")
	if d := cmp.Diff(string(v2.XSD), schemaOf("echo")); d != "" {
		t.Errorf("echo after the peer said its exports changed (-want +got):\n%s", d)
	}
	m.gateways[0].mu.Lock()
	same := m.gateways[0].conn == link
	m.gateways[0].mu.Unlock()
	if !same {
		t.Error("the imports were refreshed by a new link, not on the live one")
	}
}
