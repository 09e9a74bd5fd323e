package federation

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestUnimportableExportNotAskedAgain: on a brand-new data directory, a
// peer exports a payload no local listener can stand for (a nested
// element) beside a good one. The good one is imported; the other is
// logged as an error naming its element, once — not as "not available
// yet" asked again for ever, since only a peer restarted with another
// contract can change it — and the next link, after the peer changed it,
// imports it.
func TestUnimportableExportNotAskedAgain(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	meta := &exportsMeta{}
	c.m.opts.Meta = meta
	echo := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD("")}
	nested := imported{Tag: "Shout", Name: "shout", Description: "shouts", XSD: []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="Shout"><xs:complexType><xs:sequence>
    <xs:element name="Inner"><xs:complexType><xs:sequence><xs:element name="X" type="xs:string"/></xs:sequence></xs:complexType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>`)}
	meta.set(echo, nested)

	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	st := openStore(t, t.TempDir(), log)
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Store: st, BackoffBase: 10 * time.Millisecond,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key),
			Import: []string{"Echo", "Shout"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("caller log:\n%s", logs.String())
		}
	})
	refreshed := make(chan error, 8)
	m.onRefresh = func(_ string, err error) { refreshed <- err }
	m.Start()
	waitRefresh := func() error {
		t.Helper()
		select {
		case err := <-refreshed:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("the imports were not refreshed")
			return nil
		}
	}

	if err := waitRefresh(); err == nil || !strings.Contains(err.Error(), "Shout.Inner") {
		t.Fatalf("first link: %v, want the nested element named", err)
	}
	if _, ok := p.Lookup("echo"); !ok {
		t.Fatal("the good export was not imported beside the bad one")
	}
	const refused, again = "cannot stand for a local listener", "asking the peer again"
	waitUntil(t, "the refused import was not logged", func() bool {
		s := logs.String()
		return strings.Contains(s, refused) || strings.Contains(s, again)
	})
	if s := logs.String(); strings.Contains(s, again) || !strings.Contains(s, "Shout.Inner") {
		t.Fatalf("the unimportable export is logged as one to ask for again, or without its element:\n%s", s)
	}

	// The peer restarts with a contract that can be imported.
	meta.set(echo, imported{Tag: "Shout", Name: "shout", Description: "shouts", XSD: []byte(strings.ReplaceAll(string(echoXSD("")), "Echo", "Shout"))})
	m.gateways[0].mu.Lock()
	link := m.gateways[0].conn
	m.gateways[0].mu.Unlock()
	link.close(errors.New("the peer restarted"))
	if err := waitRefresh(); err != nil {
		t.Fatalf("second link: %v", err)
	}
	if _, ok := p.Lookup("shout"); !ok {
		t.Fatal("the export the peer made importable was not imported on the next link")
	}
}
