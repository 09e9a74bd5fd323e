package memory

import (
	"strings"
	"testing"
)

func TestProhibited(t *testing.T) {
	for _, tc := range []struct {
		name, text, kind string
	}{
		{"pem rsa", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow…\n-----END RSA PRIVATE KEY-----", KindPrivateKey},
		{"pkcs8", "-----BEGIN PRIVATE KEY-----", KindPrivateKey},
		{"openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", KindPrivateKey},
		{"openssh body without armour", "my key b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", KindPrivateKey},
		{"encrypted pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----", KindPrivateKey},
		{"pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----", KindPrivateKey},
		{"putty", "PuTTY-User-Key-File-3: ssh-ed25519", KindPrivateKey},
		{"openai", "use sk-proj-abcdefghijklmnop1234567890 for the api", KindAPIKey},
		{"openai plain", "sk-abcdefghijklmnopqrstuv", KindAPIKey},
		{"anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwx", KindAPIKey},
		{"xai", "xai-AbCdEfGhIjKlMnOpQrStUv", KindAPIKey},
		{"github", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", KindAPIKey},
		{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghijkl", KindAPIKey},
		{"aws", "AKIAIOSFODNN7EXAMPLE is the key id", KindAPIKey},
		{"slack", "xoxb-123456789012-abcdefghij", KindAPIKey},
		{"google", "AIzaSyA1234567890abcdefghijklmnopqrstuv", KindAPIKey},
		{"stripe", "sk_live_abcdefghijklmnop1234", KindAPIKey},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", KindToken},
		{"bearer", "Authorization: Bearer abcdefghij0123456789klmnop", KindToken},
		{"password colon", "the wifi password: hunter2", KindPassword},
		{"password is", "My password is swordfish.", KindPassword},
		{"pwd equals", "pwd=Tr0ub4dor&3", KindPassword},
		{"passphrase", "passphrase: correct horse battery staple", KindPassword},
		{"pin", "my PIN is 4821", KindPassword},
		{"api key named", "api_key = 9f8e7d6c5b4a3210", KindSecret},
		{"client secret", "client secret: q8s7d6f5g4h3j2k1", KindSecret},
		{"visa", "card 4111 1111 1111 1111 exp 12/29", KindCardNumber},
		{"visa dashes", "4111-1111-1111-1111", KindCardNumber},
		{"amex", "378282246310005", KindCardNumber},
		{"mastercard compact", "pay with 5555555555554444 please", KindCardNumber},
		{"ssn", "SSN 123-45-6789", KindSSN},
		{"random base64", "the value is Zq8vX2mTn4KpR7wYs1LdF9hBc3JgN6tQ for later", KindSecret},
		{"random lower", "djqp3lb86hhkg7ibb699ffgsta9ww1072jbo61hu", KindSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := Prohibited(tc.text)
			if !ok || f.Kind != tc.kind {
				t.Fatalf("Prohibited(%q) = %+v %v, want %s", tc.text, f, ok, tc.kind)
			}
			if f.Reason == "" || strings.Contains(f.Reason, tc.text) {
				t.Fatalf("reason %q", f.Reason)
			}
		})
	}
}

func TestNotProhibited(t *testing.T) {
	for _, text := range []string{
		"Alice prefers tea over coffee.",
		"The password is required on every login.",
		"Remember: the password manager is 1Password.",
		"Her password was changed last week.",
		"Use a token bucket for rate limits.",
		"The secret is to add salt early.",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bob@host", // a public key
		"-----BEGIN PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----",
		"commit 3f9c0a12d4e7b8a9c0d1e2f3a4b5c6d7e8f90a1b fixed it",
		"sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"request 550e8400-e29b-41d4-a716-446655440000 failed",
		"MyVeryLongJavaClassNameFactory2Builder is the class",
		"see src/main/java/com/Example/Service2Impl/Handler.java",
		"internationalization_and_localization_2024_guidelines",
		"ThisIsALongSentenceWrittenInCamelCase2025",
		"call me at +1 415 555 0100",
		"the epoch was 1700000000000 ms",
		"order 4111 1111 1111 1112 is not a valid card",
		"invoice 000-12-3456 is not an SSN",
		"mask-abcdefghijklmnopqrstuv is a CSS class",
		"",
	} {
		if f, ok := Prohibited(text); ok {
			t.Errorf("Prohibited(%q) = %+v, want nothing", text, f)
		}
	}
}

func TestLuhn(t *testing.T) {
	for s, want := range map[string]bool{"4111111111111111": true, "4111111111111112": false, "79927398713": true, "0": true} {
		if got := luhn([]byte(s)); got != want {
			t.Errorf("luhn(%s) = %v", s, got)
		}
	}
}

func TestProhibitedScansALongTextOnlyUpToItsBound(t *testing.T) {
	long := strings.Repeat("a", MaxScanBytes) + " password: hunter2"
	if _, ok := Prohibited(long); ok {
		t.Fatal("scanned beyond MaxScanBytes")
	}
	if _, ok := Prohibited("password: hunter2 " + long); !ok {
		t.Fatal("missed a password at the start")
	}
}

func FuzzProhibited(f *testing.F) {
	for _, s := range []string{"password: x", "4111 1111 1111 1111", "-----BEGIN PRIVATE KEY-----", "sk-abcdefghijklmnopqrst",
		"eyJa.eyJb.c", "Ut/feb2PZrYuQ8fuEOYU3FejkjXfUh8A", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		f1, ok1 := Prohibited(s)
		f2, ok2 := Prohibited(s)
		if ok1 != ok2 || f1 != f2 {
			t.Fatalf("not deterministic on %q", s)
		}
		if ok1 && (f1.Kind == "" || f1.Reason == "") {
			t.Fatalf("finding without kind or reason: %+v", f1)
		}
	})
}
