package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is the tests' clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestSelfSignedGenerates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cert, err := SelfSigned(dir, []string{"bus.example.org", "192.0.2.7", "localhost", ""}, at(t0))
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		t.Fatal("no leaf")
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("key is %T, want ECDSA P-256", leaf.PublicKey)
	}
	host, _ := os.Hostname()
	for _, name := range []string{"localhost", "bus.example.org", host} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("no SAN for %q: %v", name, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "192.0.2.7"} {
		if err := leaf.VerifyHostname(ip); err != nil {
			t.Errorf("no SAN for %s: %v", ip, err)
		}
	}
	if n := slices.Index(leaf.DNSNames, "localhost"); n < 0 || slices.Index(leaf.DNSNames[n+1:], "localhost") >= 0 {
		t.Errorf("DNS names %v: localhost missing or duplicated", leaf.DNSNames)
	}
	if !leaf.NotAfter.Equal(t0.Add(Validity)) || leaf.NotBefore.After(t0) {
		t.Errorf("validity %v – %v, want until %v", leaf.NotBefore, leaf.NotAfter, t0.Add(Validity))
	}
	if leaf.SerialNumber.BitLen() < 64 {
		t.Errorf("serial %v is not random-looking", leaf.SerialNumber)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFileName))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, info.Mode())
	}
	// Nothing else (no temporary files) is left in dir.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{CertFileName, KeyFileName}) {
		t.Errorf("dir holds %v", names)
	}
}

func TestSelfSignedReuse(t *testing.T) {
	dir := t.TempDir()
	first, err := SelfSigned(dir, nil, at(t0))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		clock   time.Time
		prepare func(t *testing.T)
		same    bool
		wantErr error
	}{
		{"reused", t0.Add(24 * time.Hour), nil, true, nil},
		{"reused just before expiry", t0.Add(Validity - time.Second), nil, true, nil},
		{"key readable by others", t0, func(t *testing.T) {
			chmod(t, filepath.Join(dir, KeyFileName), 0o644)
		}, false, ErrKeyPermissions},
		{"key mode restored", t0, func(t *testing.T) {
			chmod(t, filepath.Join(dir, KeyFileName), 0o600)
		}, true, nil},
		{"regenerated after expiry", t0.Add(Validity), nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prepare != nil {
				tt.prepare(t)
			}
			got, err := SelfSigned(dir, nil, at(tt.clock))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if same := Fingerprint(got) == Fingerprint(first); same != tt.same {
				t.Fatalf("same certificate = %v, want %v", same, tt.same)
			}
		})
	}
}

func TestSelfSignedIncomplete(t *testing.T) {
	for _, missing := range []string{CertFileName, KeyFileName} {
		t.Run("without "+missing, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := SelfSigned(dir, nil, at(t0)); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, missing)); err != nil {
				t.Fatal(err)
			}
			if _, err := SelfSigned(dir, nil, at(t0)); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("err = %v, want ErrIncomplete", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	want, err := SelfSigned(dir, nil, at(t0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName))
	if err != nil || got.Leaf == nil || Fingerprint(got) != Fingerprint(want) {
		t.Fatalf("Load = %v, %v", Fingerprint(got), err)
	}
	other := t.TempDir()
	if _, err := SelfSigned(other, nil, at(t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, CertFileName), filepath.Join(other, KeyFileName)); err == nil {
		t.Error("Load of a mismatched pair succeeded")
	}
	if _, err := Load(filepath.Join(dir, "nope.pem"), filepath.Join(dir, KeyFileName)); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestFingerprint(t *testing.T) {
	cert, err := SelfSigned(t.TempDir(), nil, at(t0))
	if err != nil {
		t.Fatal(err)
	}
	fp := Fingerprint(cert)
	if len(fp) != 95 || strings.ToUpper(fp) != fp || strings.Count(fp, ":") != 31 {
		t.Fatalf("fingerprint %q is not 32 upper-case colon-separated pairs", fp)
	}
	want, err := ParseFingerprint(fp)
	if err != nil {
		t.Fatal(err)
	}
	plain := strings.ReplaceAll(fp, ":", "")
	for _, s := range []string{fp, strings.ToLower(fp), plain, strings.ToLower(plain), "SHA256:" + fp, " sha256:" + plain + "\n"} {
		got, err := ParseFingerprint(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ParseFingerprint(%q) = %x, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "AB:CD", plain[:62], plain + "00", fp[:94] + "G", strings.Replace(fp, ":", "::", 1), fp[:2] + fp[3:]} {
		if _, err := ParseFingerprint(s); !errors.Is(err, ErrFingerprint) {
			t.Errorf("ParseFingerprint(%q) = %v, want ErrFingerprint", s, err)
		}
	}
	if Fingerprint(tls.Certificate{}) != "" {
		t.Error("fingerprint of an empty certificate")
	}
}

// TestHandshake runs real TLS handshakes over loopback.
func TestHandshake(t *testing.T) {
	cert, err := SelfSigned(t.TempDir(), nil, at(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	pin, err := ParseFingerprint(Fingerprint(cert))
	if err != nil {
		t.Fatal(err)
	}
	other, err := SelfSigned(t.TempDir(), nil, at(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	otherPin, _ := ParseFingerprint(Fingerprint(other))
	tls12 := PinnedClientConfig(pin)
	tls12.MinVersion, tls12.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)

	tests := []struct {
		name    string
		client  *tls.Config
		wantErr error // nil: handshake succeeds; errAny: any failure
	}{
		{"pinned match", PinnedClientConfig(pin), nil},
		{"pinned mismatch", PinnedClientConfig(otherPin), ErrFingerprintMismatch},
		{"empty pin", PinnedClientConfig(nil), ErrFingerprintMismatch},
		{"TLS 1.2-only client refused", tls12, errAny},
		{"unpinned client without the root refused", &tls.Config{ServerName: "localhost"}, errAny},
		{"client trusting the certificate", &tls.Config{RootCAs: roots, ServerName: "localhost"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version, err := handshake(t, ServerConfig(cert), tt.client)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("handshake failed: %v", err)
			case tt.wantErr == nil && version != tls.VersionTLS13:
				t.Fatalf("negotiated %s, want TLS 1.3", tls.VersionName(version))
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("handshake err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// errAny marks a handshake expected to fail for any reason.
var errAny = errors.New("any error")

// handshake connects a client with cfg to a loopback server with srv, and
// returns the negotiated version or the client's handshake error. The
// server echoes one byte to prove the connection works.
func handshake(t *testing.T, srv, cfg *tls.Config) (uint16, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		s := tls.Server(c, srv)
		if err := s.Handshake(); err != nil {
			served <- err
			return
		}
		_, err = io.CopyN(s, s, 1)
		served <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, cfg)
	defer c.Close()
	if err := c.Handshake(); err != nil {
		raw.Close()
		<-served
		return 0, err
	}
	if _, err := c.Write([]byte{'x'}); err != nil {
		return 0, err
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil || buf[0] != 'x' {
		return 0, err
	}
	if err := <-served; err != nil {
		return 0, err
	}
	return c.ConnectionState().Version, nil
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
