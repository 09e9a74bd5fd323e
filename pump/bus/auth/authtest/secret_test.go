package authtest

import (
	"testing"

	"github.com/pquerna/otp/totp"
)

func TestSecret(t *testing.T) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "xmlpipe", AccountName: "alice@hello-world"})
	if err != nil {
		t.Fatal(err)
	}
	if got := Secret(t, key.URL()); got != key.Secret() {
		t.Errorf("Secret(%q) = %q, want %q", key.URL(), got, key.Secret())
	}
}
