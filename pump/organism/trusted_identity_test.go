package organism

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestTrustedIdentityErrorHasPosition: a gateway's trusted_identity that is
// missing or does not read is refused at assembly (xmlpipe validate, run)
// with its file:line, as a reload refuses it — not as a bare "federation:
// gateway b: trusted_identity …".
func TestTrustedIdentityErrorHasPosition(t *testing.T) {
	self, peer := newFedSide(t), newFedSide(t)
	garbled := filepath.Join(t.TempDir(), "garbled.pub")
	if err := os.WriteFile(garbled, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, identity, want string }{
		{"missing", filepath.Join(t.TempDir(), "nope.pub"),
			`^o\.yaml:6: gateways\[1\]\.trusted_identity: gateway b: .*nope\.pub.*no such file or directory$`},
		{"unreadable", garbled, `^o\.yaml:6: gateways\[1\]\.trusted_identity: gateway b: .*garbled\.pub`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("o.yaml", []byte(`organism: {name: fed}
gateways:
  - name: a
    trusted_identity: `+peer.pub+`
  - name: b
    trusted_identity: `+tt.identity+`
`))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(cfg, Options{DataDir: self.dir, Logger: fedLogger()})
			if err == nil || !regexp.MustCompile(tt.want).MatchString(err.Error()) {
				t.Fatalf("New = %v, want an error matching %s", err, tt.want)
			}
		})
	}
}
