package auth

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestHashPassword(t *testing.T) {
	h, err := hashPassword("hunter2hunter2", cheap)
	if err != nil {
		t.Fatal(err)
	}
	// 16-byte salt → 22 base64 characters, 32-byte key → 43.
	if !regexp.MustCompile(`^\$argon2id\$v=19\$m=64,t=1,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`).MatchString(h) {
		t.Fatalf("hash %q is not the expected PHC string", h)
	}
	again, err := hashPassword("hunter2hunter2", cheap)
	if err != nil || again == h {
		t.Fatalf("two hashes of one password are equal (salt not random): %q", h)
	}
	for pw, want := range map[string]bool{"hunter2hunter2": true, "hunter2hunter3": false, "": false} {
		if ok, err := verifyPassword(pw, h); err != nil || ok != want {
			t.Errorf("verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
}

// TestVerifyReferenceHash: the argon2id test vector of the reference C
// implementation (phc-winner-argon2 src/test.c: "password", "somesalt",
// t=2, m=2^16, p=1) verifies, so hashes from other PHC encoders do too.
func TestVerifyReferenceHash(t *testing.T) {
	const ref = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	for pw, want := range map[string]bool{"password": true, "Password": false} {
		if ok, err := verifyPassword(pw, ref); err != nil || ok != want {
			t.Errorf("verify(%q, reference) = %v, %v; want %v", pw, ok, err, want)
		}
	}
}

func TestParsePHCRejects(t *testing.T) {
	good := "$argon2id$v=19$m=64,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$" + strings.Repeat("A", 43)
	if _, err := parsePHC(good); err != nil {
		t.Fatalf("control: %v", err)
	}
	for name, s := range map[string]string{
		"empty":        "",
		"argon2i":      strings.Replace(good, "argon2id", "argon2i", 1),
		"version 16":   strings.Replace(good, "v=19", "v=16", 1),
		"no params":    strings.Replace(good, "m=64,t=1,p=1", "", 1),
		"zero time":    strings.Replace(good, "t=1", "t=0", 1),
		"zero threads": strings.Replace(good, "p=1", "p=0", 1),
		"256 threads":  strings.Replace(good, "m=64,t=1,p=1", "m=4096,t=1,p=256", 1),
		"tiny memory":  strings.Replace(good, "m=64,t=1,p=1", "m=7,t=1,p=1", 1),
		"huge memory":  strings.Replace(good, "m=64", "m=99999999", 1),
		"bad salt":     strings.Replace(good, "c29tZXNhbHRzb21lc2FsdA", "!!!", 1),
		"short key":    strings.TrimSuffix(good, strings.Repeat("A", 30)),
		"extra field":  good + "$x",
	} {
		if _, err := parsePHC(s); !errors.Is(err, errBadHash) {
			t.Errorf("%s: parsePHC(%q) = %v, want errBadHash", name, s, err)
		}
	}
}
