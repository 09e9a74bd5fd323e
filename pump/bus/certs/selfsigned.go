package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names of the self-signed pair in the data directory.
const (
	CertFileName = "bus-cert.pem"
	KeyFileName  = "bus-key.pem"
)

// Validity is the lifetime of a generated certificate.
const Validity = 365 * 24 * time.Hour

// backdate is how far before now a generated certificate becomes valid, to
// tolerate clients whose clocks are slightly behind.
const backdate = 5 * time.Minute

// SelfSigned returns the self-signed certificate kept in dir: dir/bus-cert.pem
// and dir/bus-key.pem when both exist (the key must not be readable by group
// or others) and the certificate has not expired at clock(); otherwise a new
// ECDSA P-256 certificate valid for one year, for localhost, 127.0.0.1, ::1,
// the host name and hosts (names or IP addresses), written there (key mode
// 0600). Regenerating changes the fingerprint that clients pin, so it only
// happens when the pair is missing or expired. A nil clock means time.Now.
func SelfSigned(dir string, hosts []string, clock func() time.Time) (tls.Certificate, error) {
	if clock == nil {
		clock = time.Now
	}
	certPath, keyPath := filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)
	certOK, err := exists(certPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	switch {
	case certOK && keyOK:
		cert, err := loadSelfSigned(certPath, keyPath)
		if err != nil {
			return tls.Certificate{}, err
		}
		if clock().Before(cert.Leaf.NotAfter) {
			return cert, nil
		}
	case certOK || keyOK:
		return tls.Certificate{}, fmt.Errorf("%w: in %s (remove the other file to regenerate)", ErrIncomplete, dir)
	}
	return generate(dir, certPath, keyPath, hosts, clock())
}

// exists reports whether path exists.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("certs: %w", err)
	}
	return true, nil
}

// loadSelfSigned loads the pair after checking the key's permissions.
func loadSelfSigned(certPath, keyPath string) (tls.Certificate, error) {
	info, err := os.Stat(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return tls.Certificate{}, fmt.Errorf("%w: %s has mode %04o (chmod 600 it)", ErrKeyPermissions, keyPath, perm)
	}
	return Load(certPath, keyPath)
}

// generate creates a new key and certificate valid from now and writes them.
func generate(dir, certPath, keyPath string, hosts []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: serial: %w", err)
	}
	hostname, _ := os.Hostname()
	dnsNames, ips := sans(append([]string{"localhost", "127.0.0.1", "::1", hostname}, hosts...))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "xmlpipe bus " + hostname, Organization: []string{"xmlpipe"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dnsNames,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: marshal key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	// The key first: a crash between the two leaves a lone key, which
	// SelfSigned reports rather than silently pairing with a new certificate.
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: generated pair: %w", err)
	}
	return cert, nil
}

// sans splits hosts into DNS names and IP addresses, dropping empty and
// duplicate entries.
func sans(hosts []string) (dnsNames []string, ips []net.IP) {
	for _, h := range hosts {
		switch ip := net.ParseIP(h); {
		case h == "":
		case ip != nil:
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		case !slices.Contains(dnsNames, h):
			dnsNames = append(dnsNames, h)
		}
	}
	return dnsNames, ips
}

// writeAtomic writes data to path with mode perm via a temporary file in the
// same directory and a rename.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}
