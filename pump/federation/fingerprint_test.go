package federation

import (
	"crypto/ed25519"
	"testing"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
)

// TestFingerprintIsKeysForm: every log line naming a peer's key (gateway
// connected, relinked, signature refused) uses the form `xmlpipe keys show`
// and the handshake refusals print, so an operator can match them.
func TestFingerprintIsKeysForm(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Fingerprint(pub), keys.Fingerprint(pub); got != want {
		t.Errorf("Fingerprint = %q, want the keys show form %q", got, want)
	}
}
