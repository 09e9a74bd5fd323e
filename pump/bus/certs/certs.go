// Package certs provides the main bus's TLS certificates: loading the
// configured pair, generating and reusing a self-signed ECDSA certificate in
// the data directory, SHA-256 fingerprints, and TLS 1.3 configurations for the
// server and for clients that pin a self-signed certificate.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Errors.
var (
	// ErrFingerprint: a fingerprint that is not 32 bytes of hex.
	ErrFingerprint = errors.New("certs: malformed SHA-256 fingerprint")
	// ErrFingerprintMismatch: the server's certificate is not the pinned one.
	ErrFingerprintMismatch = errors.New("certs: server certificate does not match the pinned fingerprint")
	// ErrKeyPermissions: a generated private key readable by group or others.
	ErrKeyPermissions = errors.New("certs: private key file is readable by others")
	// ErrIncomplete: only one of the self-signed certificate and key exists.
	ErrIncomplete = errors.New("certs: self-signed certificate and key must both exist or both be absent")
)

// Load loads a PEM certificate chain and its private key (organism.tls).
// The returned certificate's Leaf is set.
func Load(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := loadPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: load %s and %s: %w", certFile, keyFile, err)
	}
	if cert.Leaf == nil { // GODEBUG=x509keypairleaf=0
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("certs: parse %s: %w", certFile, err)
		}
	}
	return cert, nil
}
