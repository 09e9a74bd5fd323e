package certs

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"strings"
)

// Fingerprint is the SHA-256 of cert's leaf certificate (DER) as upper-case
// hex pairs separated by colons, "AB:CD:…" (95 characters); "" when cert has
// no certificate.
func Fingerprint(cert tls.Certificate) string {
	if len(cert.Certificate) == 0 {
		return ""
	}
	return FingerprintDER(cert.Certificate[0])
}

// FingerprintDER is the colon-separated SHA-256 fingerprint of a DER
// certificate.
func FingerprintDER(der []byte) string {
	sum := sha256.Sum256(der)
	return formatFingerprint(sum[:])
}

// formatFingerprint writes b as upper-case hex pairs separated by colons.
func formatFingerprint(b []byte) string {
	var sb strings.Builder
	const digits = "0123456789ABCDEF"
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&0xf])
	}
	return sb.String()
}

// ParseFingerprint parses a SHA-256 fingerprint written as Fingerprint does
// ("AB:CD:…") or as 64 plain hex digits, in any case, optionally prefixed by
// "SHA256:" and surrounded by spaces.
func ParseFingerprint(s string) ([]byte, error) {
	t := strings.TrimSpace(s)
	if len(t) >= 7 && strings.EqualFold(t[:7], "sha256:") {
		t = t[7:]
	}
	if strings.Contains(t, ":") {
		parts := strings.Split(t, ":")
		for _, p := range parts {
			if len(p) != 2 {
				return nil, fmt.Errorf("%w: %q", ErrFingerprint, s)
			}
		}
		t = strings.Join(parts, "")
	}
	b, err := hex.DecodeString(t)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%w: %q (want 32 hex pairs)", ErrFingerprint, s)
	}
	return b, nil
}
