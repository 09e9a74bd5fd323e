package keys

import (
	"crypto/ed25519"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitCreatesPrivateKeysMode0600(t *testing.T) {
	dir := t.TempDir()
	p := PathsFor(dir, "")
	created, err := Init(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 3 {
		t.Fatalf("created %v, want organism, owner and owner.pub", created)
	}
	for _, f := range []string{p.Organism, p.Owner} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	st, err := os.Stat(filepath.Join(dir, Dir))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("keys dir: %v %v, want 0700", st.Mode().Perm(), err)
	}
	set, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := OwnerPublic(p)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(set.Owner.Public()) {
		t.Error("owner.pub is not the owner's public key")
	}
	// A second init keeps every key.
	again, err := Init(p)
	if err != nil || len(again) != 0 {
		t.Fatalf("second init created %v, %v", again, err)
	}
	set2, _ := Load(p)
	if !set2.Organism.Equal(set.Organism) || !set2.Owner.Equal(set.Owner) {
		t.Error("second init replaced a key")
	}
}

func TestIdentityPathOverrides(t *testing.T) {
	dir := t.TempDir()
	id := filepath.Join(dir, "elsewhere", "id.ed25519")
	p := PathsFor(filepath.Join(dir, "data"), id)
	if _, err := Init(p); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivate(id); err != nil {
		t.Fatalf("identity not at organism.identity: %v", err)
	}
}

func TestExportAndFingerprint(t *testing.T) {
	dir := t.TempDir()
	p := PathsFor(dir, "")
	if _, err := Init(p); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pub", "organism.ed25519.pub")
	if err := Export(p, out); err != nil {
		t.Fatal(err)
	}
	pub, err := ReadPublic(out)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := Load(p)
	if !pub.Equal(set.Organism.Public()) {
		t.Error("exported key is not the organism's")
	}
	if err := Export(p, out); !errors.Is(err, fs.ErrExist) {
		t.Errorf("export over an existing file: %v, want ErrExist", err)
	}
	fp := Fingerprint(pub)
	if !strings.HasPrefix(fp, "SHA256:") || len(fp) != len("SHA256:")+43 {
		t.Errorf("fingerprint %q", fp)
	}
	if Fingerprint(set.Owner.Public().(ed25519.PublicKey)) == fp {
		t.Error("two keys share a fingerprint")
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	p := PathsFor(dir, "")
	if _, err := Load(p); !errors.Is(err, ErrNoKeys) {
		t.Errorf("load without keys: %v, want ErrNoKeys", err)
	}
	if _, err := Init(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.Owner, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OwnerPrivate(p); !errors.Is(err, ErrExposed) {
		t.Errorf("readable owner key: %v, want ErrExposed", err)
	}
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"not pem", "hello", ErrBadPEM},
		{"wrong block", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", ErrBadPEM},
		{"garbage der", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", ErrBadPEM},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParsePublic([]byte(tc.in)); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}
