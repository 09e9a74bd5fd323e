package authtest

import (
	"testing"

	"github.com/pquerna/otp"
)

// Secret is the base32 TOTP secret of a provisioning URL (what AddUser and
// ResetTOTP return); a URL that does not parse fails the test.
func Secret(t testing.TB, provisioningURL string) string {
	t.Helper()
	key, err := otp.NewKeyFromURL(provisioningURL)
	if err != nil {
		t.Fatalf("provisioning URL %q: %v", provisioningURL, err)
	}
	return key.Secret()
}
