package oob

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestReloadOverOOB: reload puts organism.yaml, read again, in force
// through the Reloader (as SIGHUP and the bus API do): an edit that adds a
// listener is acked and the listener runs; a broken edit is RELOAD_REFUSED
// naming file:line, and the running configuration stays; without a
// Reloader it is NOT_SUPPORTED.
func TestReloadOverOOB(t *testing.T) {
	base, err := os.ReadFile("../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, base, 0o600); err != nil {
		t.Fatal(err)
	}
	var f *fixture
	f = newFixtureFrom(t, path, func(o *Options) {
		o.Target.Reloader = ReloaderFunc(func(reason string) error {
			cfg, err := config.Load(path)
			if err != nil {
				return fmt.Errorf("reload refused: %w", err)
			}
			_, err = f.org.Reload(cfg)
			return err
		})
	})
	added := string(base) + "  - {name: calc2, payload_class: tools.Calculate, handler: tools.Calculate, description: calculates}\n"
	broken := string(base) + "  - {name: broken, payload_class: no.such.Class, handler: no.such.handle}\n"
	tests := []struct {
		name, doc string
		code      string // "" for an ack
		message   *regexp.Regexp
		listener  bool // calc2 runs afterwards
	}{
		{"adds a listener", added, "", regexp.MustCompile(`^reloaded$`), true},
		{"broken edit", broken, CodeReloadRefused, regexp.MustCompile(`organism\.yaml:\d+`), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			r := f.do(t, `<reload><reason>edit</reason></reload>`)
			if got := code(r); got != tc.code {
				t.Fatalf("reload: code %q (%+v), want %q", got, r.Payload, tc.code)
			}
			msg := ""
			if r.Payload.Ack != nil {
				msg = r.Payload.Ack.Message
			} else if r.Payload.Error != nil {
				msg = r.Payload.Error.Message
			}
			if !tc.message.MatchString(msg) {
				t.Errorf("reload message %q, want it to match %s", msg, tc.message)
			}
			if _, ok := f.org.Pump.Lookup("calc2"); ok != tc.listener {
				t.Errorf("calc2 registered: %v, want %v", ok, tc.listener)
			}
		})
	}
	if !strings.Contains(f.logs.String(), "reload requested over OOB") {
		t.Error("the reload is not logged")
	}

	bare := newFixture(t, nil)
	if r := bare.do(t, `<reload/>`); code(r) != CodeNotSupported {
		t.Fatalf("reload without a Reloader: %+v, want %s", r.Payload, CodeNotSupported)
	}
}
