package organism

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestReloadRefusesARotatedPeerIdentity: a gateway reads its peer's
// trusted_identity at the start. When the peer's key is rotated and its
// new identity exported over the same file, a reload — whose
// configuration reads the same — must not report that it applied while
// the link goes on refusing the peer's new key: it is refused, naming the
// gateway's trusted_identity with its file:line, as any gateway change
// that applies at the next start. A file that no longer reads is refused
// likewise; an unchanged one reloads.
func TestReloadRefusesARotatedPeerIdentity(t *testing.T) {
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
	for _, tc := range []struct {
		name string
		file []byte // nil: removed
		want []string
	}{
		{"unchanged", original, nil},
		{"rotated", newKey, []string{"a.yaml:", "gateways[0].trusted_identity: " + b.pub +
			" holds another key than gateway b trusts: a peer's new identity applies only at the next start"}},
		{"removed", nil, []string{"a.yaml:", "gateways[0].trusted_identity:",
			"the gateway keeps the identity it read at the start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file == nil {
				if err := os.Remove(b.pub); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(b.pub, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := o.Reload(loadFedConfig(t, "a.yaml", b.pub, "wss://127.0.0.1:1"))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("reload with the identity unchanged: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrReloadRefused) {
				t.Fatalf("reload: %v, want it refused", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
