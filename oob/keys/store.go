package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File names inside the data directory.
const (
	// Dir is the keys folder of the data directory.
	Dir = "keys"
	// OrganismFile is the organism's private key (unless organism.identity
	// names another path).
	OrganismFile = "organism.ed25519"
	// OwnerFile is the owner's private key.
	OwnerFile = "owner.ed25519"
	// PublicSuffix ends a public key file's name.
	PublicSuffix = ".pub"
)

// ErrNoKeys: the key files are missing (run xmlpipe keys init).
var ErrNoKeys = errors.New("no keys (run: xmlpipe keys init)")

// Paths are the key files of one organism.
type Paths struct {
	// Organism is the organism's private key.
	Organism string
	// Owner is the owner's private key.
	Owner string
	// OwnerPublic is the owner's public key.
	OwnerPublic string
}

// PathsFor returns the key files of the data directory dataDir; identity,
// when not empty, is organism.identity (the organism's private key path).
func PathsFor(dataDir, identity string) Paths {
	dir := filepath.Join(dataDir, Dir)
	p := Paths{
		Organism:    filepath.Join(dir, OrganismFile),
		Owner:       filepath.Join(dir, OwnerFile),
		OwnerPublic: filepath.Join(dir, OwnerFile+PublicSuffix),
	}
	if identity != "" {
		p.Organism = identity
	}
	return p
}

// Set is the loaded keys.
type Set struct {
	Organism ed25519.PrivateKey
	Owner    ed25519.PrivateKey
}

// Init creates the key files that do not exist yet: the organism's identity
// and the owner's key pair (private keys mode 0600). Existing files are kept,
// never replaced. It returns the paths it created.
func Init(p Paths) ([]string, error) {
	var created []string
	for _, f := range []struct {
		priv, pub string
	}{{p.Organism, ""}, {p.Owner, p.OwnerPublic}} {
		if _, err := os.Stat(f.priv); err == nil {
			if f.pub != "" {
				if err := ensurePublic(f.priv, f.pub, &created); err != nil {
					return created, err
				}
			}
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return created, fmt.Errorf("keys: %w", err)
		}
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return created, fmt.Errorf("keys: %w", err)
		}
		b, err := MarshalPrivate(k)
		if err != nil {
			return created, err
		}
		if err := writeNew(f.priv, b, 0o600); err != nil {
			return created, err
		}
		created = append(created, f.priv)
		if f.pub != "" {
			if err := ensurePublic(f.priv, f.pub, &created); err != nil {
				return created, err
			}
		}
	}
	return created, nil
}

// ensurePublic writes the public half of priv to pub when pub is missing.
func ensurePublic(priv, pub string, created *[]string) error {
	if _, err := os.Stat(pub); err == nil {
		return nil
	}
	k, err := ReadPrivate(priv)
	if err != nil {
		return err
	}
	b, err := MarshalPublic(k.Public().(ed25519.PublicKey))
	if err != nil {
		return err
	}
	if err := writeNew(pub, b, 0o644); err != nil {
		return err
	}
	*created = append(*created, pub)
	return nil
}

// Load reads both private keys; a missing file is ErrNoKeys.
func Load(p Paths) (Set, error) {
	var s Set
	var err error
	if s.Organism, err = readOrMissing(p.Organism); err != nil {
		return Set{}, err
	}
	if s.Owner, err = readOrMissing(p.Owner); err != nil {
		return Set{}, err
	}
	return s, nil
}

// OwnerPublic reads the owner's public key: the .pub file, else the public
// half of the private key; ErrNoKeys when neither exists.
func OwnerPublic(p Paths) (ed25519.PublicKey, error) {
	k, err := ReadPublic(p.OwnerPublic)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	priv, err := readOrMissing(p.Owner)
	if err != nil {
		return nil, err
	}
	return priv.Public().(ed25519.PublicKey), nil
}

// OwnerPrivate reads the owner's private key; ErrNoKeys when missing.
func OwnerPrivate(p Paths) (ed25519.PrivateKey, error) { return readOrMissing(p.Owner) }

func readOrMissing(path string) (ed25519.PrivateKey, error) {
	k, err := ReadPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("keys: %s: %w", path, ErrNoKeys)
	}
	return k, err
}

// Export writes the organism's public identity to path (mode 0644, never
// replacing a file).
func Export(p Paths, path string) error {
	k, err := readOrMissing(p.Organism)
	if err != nil {
		return err
	}
	b, err := MarshalPublic(k.Public().(ed25519.PublicKey))
	if err != nil {
		return err
	}
	return writeNew(path, b, 0o644)
}
