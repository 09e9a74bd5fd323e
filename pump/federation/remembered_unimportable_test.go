package federation

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestRememberedUnimportableForgotten: an earlier version remembered an
// import no local listener can stand for (a nested element) beside a good
// one. Prepare registers the good one and does not return the other as an
// import "not available yet" — no link can bring it — but says once, at
// info, that it is forgotten.
func TestRememberedUnimportableForgotten(t *testing.T) {
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	p := callerPump(t, log, nil)
	st := openStore(t, t.TempDir(), log)
	m, err := New(Options{Organism: "a", Key: newKey(t), Pump: p, Logger: log, Store: st,
		Gateways: []config.Gateway{{Name: "b", TrustedIdentity: writePublic(t, newKey(t)), Import: []string{"Echo", "Shout"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	echo := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD("")}
	nested := imported{Tag: "Shout", Name: "shout", Description: "shouts", XSD: []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="Shout"><xs:complexType><xs:sequence>
    <xs:element name="Inner"><xs:complexType><xs:sequence><xs:element name="X" type="xs:string"/></xs:sequence></xs:complexType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>`)}
	if err := m.db.saveImports(context.Background(), "b", []imported{echo, nested}); err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(context.Background(), 0); err != nil {
		t.Errorf("Prepare: %v, want the unimportable remembered import forgotten, not returned", err)
	}
	if _, ok := p.Lookup("echo"); !ok {
		t.Error("the good remembered import was not registered")
	}
	if s := logs.String(); strings.Count(s, "Shout.Inner") != 1 || !strings.Contains(s, "forgotten") {
		t.Errorf("want one line saying the unimportable import is forgotten, naming its element:\n%s", s)
	}
}
