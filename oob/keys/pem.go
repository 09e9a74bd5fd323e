package keys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// PEM block types.
const (
	pemPrivate = "PRIVATE KEY"
	pemPublic  = "PUBLIC KEY"
)

// Key file errors.
var (
	// ErrNotEd25519: the PEM file holds a key of another algorithm.
	ErrNotEd25519 = errors.New("not an Ed25519 key")
	// ErrBadPEM: the file is not a PEM key of the expected type.
	ErrBadPEM = errors.New("not a PEM key")
	// ErrExposed: a private key file can be read by other users.
	ErrExposed = errors.New("private key readable by group or others")
)

// MarshalPrivate encodes a private key as a PKCS#8 PEM block.
func MarshalPrivate(k ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: der}), nil
}

// MarshalPublic encodes a public key as a PKIX PEM block.
func MarshalPublic(k ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der}), nil
}

// ParsePrivate decodes a PKCS#8 PEM Ed25519 private key.
func ParsePrivate(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != pemPrivate {
		return nil, fmt.Errorf("%w (want %q)", ErrBadPEM, pemPrivate)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrNotEd25519, k)
	}
	return ek, nil
}

// ParsePublic decodes a PKIX PEM Ed25519 public key; a private key PEM is
// accepted too and yields its public half.
func ParsePublic(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%w (want %q)", ErrBadPEM, pemPublic)
	}
	switch blk.Type {
	case pemPublic:
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: %T", ErrNotEd25519, k)
		}
		return ek, nil
	case pemPrivate:
		k, err := ParsePrivate(b)
		if err != nil {
			return nil, err
		}
		return k.Public().(ed25519.PublicKey), nil
	}
	return nil, fmt.Errorf("%w: block %q", ErrBadPEM, blk.Type)
}

// Fingerprint is "SHA256:" and the unpadded base64 of the SHA-256 of the
// raw public key.
func Fingerprint(k ed25519.PublicKey) string {
	sum := sha256.Sum256(k)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// ReadPrivate reads a private key file, refusing one that group or others
// may read.
func ReadPrivate(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("keys: %s: %w (mode %v; chmod 600 it)", path, ErrExposed, st.Mode().Perm())
	}
	b, err := regfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	k, err := ParsePrivate(b)
	if err != nil {
		return nil, fmt.Errorf("keys: %s: %w", path, err)
	}
	return k, nil
}

// ReadPublic reads a public key file (or the public half of a private one).
func ReadPublic(path string) (ed25519.PublicKey, error) {
	b, err := regfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	k, err := ParsePublic(b)
	if err != nil {
		return nil, fmt.Errorf("keys: %s: %w", path, err)
	}
	return k, nil
}

// writeNew writes b to path with mode perm, creating its directory with mode
// 0700; it never replaces an existing file (fs.ErrExist).
func writeNew(path string, b []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(path, perm) // the umask may have narrowed it
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}
