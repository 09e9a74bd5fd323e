package organism

import (
	"crypto/ed25519"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
)

// TestReloadRelinksARotatedPeerIdentity: a gateway reads its peer's
// trusted_identity when it starts. When the peer's key is rotated and its
// new identity exported over the same file, a reload relinks the gateway
// trusting the new key (it used to be refused until the next start). A
// file that no longer reads refuses the reload, naming the gateway's
// trusted_identity with its file:line, and the gateway keeps its key; an
// unchanged one changes nothing.
func TestReloadRelinksARotatedPeerIdentity(t *testing.T) {
	a, b, rotated := newFedSide(t), newFedSide(t), newFedSide(t)
	o, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, "wss://127.0.0.1:1"), a, Options{}, false)
	original, err := os.ReadFile(b.pub)
	if err != nil {
		t.Fatal(err)
	}
	newKey, err := os.ReadFile(rotated.pub)
	if err != nil {
		t.Fatal(err)
	}
	rotatedKey, err := keys.ReadPublic(rotated.pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		file    []byte // nil: removed
		changed []string
		refused []string // what the refusal says (nil: applied)
	}{
		{"unchanged", original, nil, nil},
		{"rotated", newKey, []string{"b"}, nil},
		{"removed", nil, nil, []string{"a.yaml:", "gateways[0].trusted_identity:", b.pub}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file == nil {
				if err := os.Remove(b.pub); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(b.pub, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := o.Reload(loadFedConfig(t, "a.yaml", b.pub, "wss://127.0.0.1:1"))
			if tc.refused == nil {
				if err != nil {
					t.Fatalf("reload: %v", err)
				}
				if d := cmp.Diff(tc.changed, rep.GatewaysChanged); d != "" {
					t.Errorf("gateways changed (-want +got):\n%s", d)
				}
			} else {
				if !errors.Is(err, ErrReloadRefused) {
					t.Fatalf("reload: %v, want it refused", err)
				}
				for _, w := range tc.refused {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the refusal lacks %q:\n%v", w, err)
					}
				}
			}
			if tc.name == "unchanged" {
				return
			}
			// Rotated, the gateway trusts the new key; refused, it keeps it.
			if k, _ := o.Federation.TrustedKey("b"); !k.Equal(ed25519.PublicKey(rotatedKey)) {
				t.Errorf("gateway b trusts %s, want the rotated %s", keys.Fingerprint(k), keys.Fingerprint(rotatedKey))
			}
		})
	}
}
