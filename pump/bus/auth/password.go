package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Sizes of new password hashes.
const (
	saltLen = 16
	keyLen  = 32
	// maxHashMemoryKiB bounds the memory a stored hash may ask for (4 GiB),
	// so a corrupted row cannot make verification allocate without limit.
	maxHashMemoryKiB = 4 << 20
	// reclaimFromKiB is the hash memory from which a hash is followed by a
	// garbage collection (see reclaim).
	reclaimFromKiB = 16 << 10
)

// errBadHash reports a stored password hash that is not an argon2id PHC
// string this package can verify.
var errBadHash = errors.New("auth: malformed argon2id hash")

// b64 is the PHC string's base64: standard alphabet, no padding.
var b64 = base64.RawStdEncoding

// hashPassword returns the PHC string
// $argon2id$v=19$m=M,t=T,p=P$salt$hash of password with a fresh 16-byte salt
// and a 32-byte key.
func hashPassword(password string, p Argon2Params) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("auth: salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	reclaim(p.MemoryKiB)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// phc is a parsed argon2id PHC string.
type phc struct {
	params    Argon2Params
	salt, key []byte
}

// parsePHC parses an argon2id PHC string written by hashPassword (or any
// argon2id v=19 encoder using the same layout).
func parsePHC(s string) (phc, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return phc{}, fmt.Errorf("%w: not an argon2id PHC string", errBadHash)
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return phc{}, fmt.Errorf("%w: version %q", errBadHash, parts[2])
	}
	var (
		h       phc
		threads uint32
	)
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &h.params.MemoryKiB, &h.params.Time, &threads); err != nil || n != 3 {
		return phc{}, fmt.Errorf("%w: parameters %q", errBadHash, parts[3])
	}
	if h.params.Time == 0 || threads == 0 || threads > 255 || h.params.MemoryKiB < 8*threads || h.params.MemoryKiB > maxHashMemoryKiB {
		return phc{}, fmt.Errorf("%w: parameters %q out of range", errBadHash, parts[3])
	}
	h.params.Threads = uint8(threads)
	var err error
	if h.salt, err = b64.DecodeString(parts[4]); err != nil || len(h.salt) < 8 {
		return phc{}, fmt.Errorf("%w: salt", errBadHash)
	}
	if h.key, err = b64.DecodeString(parts[5]); err != nil || len(h.key) < 16 {
		return phc{}, fmt.Errorf("%w: key", errBadHash)
	}
	return h, nil
}

// verifyPassword reports whether password matches the PHC string encoded,
// comparing keys in constant time.
func verifyPassword(password, encoded string) (bool, error) {
	h, err := parsePHC(encoded)
	if err != nil {
		return false, err
	}
	key := argon2.IDKey([]byte(password), h.salt, h.params.Time, h.params.MemoryKiB, h.params.Threads, uint32(len(h.key)))
	reclaim(h.params.MemoryKiB)
	return subtle.ConstantTimeCompare(key, h.key) == 1, nil
}

// dummyVerify spends one hash with parameters p and discards it, so a login
// for an unknown user takes as long as one for a known user.
func dummyVerify(password string, p Argon2Params) {
	var salt [saltLen]byte
	_ = argon2.IDKey([]byte(password), salt[:], p.Time, p.MemoryKiB, p.Threads, keyLen)
	reclaim(p.MemoryKiB)
}

// reclaim collects the garbage of a hash that used memoryKiB, when that is
// at least reclaimFromKiB. argon2id allocates its whole memory cost per
// hash and drops it at once; left to the pacer, the heap would grow to
// twice the hashes running at a collection plus the garbage of the
// finished ones (measured: 386 MB of peak RSS for 2 slots of 64 MiB, 730
// MB under the race detector). Collecting before the hash slot is freed
// lets the next hash reuse the same pages, so the peak stays near
// MaxConcurrentHashes × the memory cost. Logins are rare: a collection per
// login costs far less than the hash itself.
func reclaim(memoryKiB uint32) {
	if memoryKiB >= reclaimFromKiB {
		runtime.GC()
	}
}
