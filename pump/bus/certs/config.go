package certs

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
)

// ServerConfig is the bus's TLS configuration: cert, TLS 1.3 only.
func ServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS13,
	}
}

// PinnedClientConfig is a TLS 1.3 client configuration that accepts exactly
// the server certificate whose SHA-256 fingerprint is fingerprint (from
// ParseFingerprint), whoever signed it and whatever names it carries: the
// way to reach a bus with a self-signed certificate. Chain and host-name
// verification are replaced by the pin, not skipped.
func PinnedClientConfig(fingerprint []byte) *tls.Config {
	pin := append([]byte(nil), fingerprint...)
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The pin below is the verification.
		InsecureSkipVerify: true, //nolint:gosec
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: no certificate presented", ErrFingerprintMismatch)
			}
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if len(pin) != sha256.Size || subtle.ConstantTimeCompare(sum[:], pin) != 1 {
				return fmt.Errorf("%w: server presented %s", ErrFingerprintMismatch, formatFingerprint(sum[:]))
			}
			return nil
		},
	}
}
