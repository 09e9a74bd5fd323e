package organism

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// approvalKeyFile is the file, in a durable organism's data directory,
// holding the secret approval ids are derived from: created once, with
// mode 0600, and read at every start, so that a held message re-delivered
// after a restart finds its approval under the same id while nobody
// without the file can compute the id of an approval from the journal seq
// of the message it holds.
const approvalKeyFile = "approvals.key"

// approvalKeySize is the size of the secret, in bytes.
const approvalKeySize = 32

// ErrApprovalKey: the approval id secret of the data directory cannot be
// read or is damaged.
var ErrApprovalKey = errors.New("organism: approval id secret")

// approvalIDs makes approval ids: an HMAC-SHA256 of a held message's
// journal seq and target under a per-organism secret (stable across
// restarts), a random one for anything else.
type approvalIDs struct {
	key []byte
}

// loadApprovalIDs reads the secret of the data directory dir, creating it
// the first time; dir "" (an organism in memory) gets a secret of its own
// that ends with the process, as its approvals do.
func loadApprovalIDs(dir string) (*approvalIDs, error) {
	if dir == "" {
		key := make([]byte, approvalKeySize)
		rand.Read(key)
		return &approvalIDs{key: key}, nil
	}
	path := filepath.Join(dir, approvalKeyFile)
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createApprovalKey(path); err != nil {
			return nil, err
		}
		key, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrApprovalKey, err)
	}
	if len(key) != approvalKeySize {
		return nil, fmt.Errorf("%w: %s holds %d bytes, want %d (restore it from a backup; removing it makes the "+
			"approvals pending now wait under new ids)", ErrApprovalKey, path, len(key), approvalKeySize)
	}
	return &approvalIDs{key: key}, nil
}

// createApprovalKey writes a fresh secret to path, whole or not at all: it
// is written and synced under a temporary name, then linked to path, which
// fails when another process created path meanwhile (its secret is kept).
func createApprovalKey(path string) error {
	key := make([]byte, approvalKeySize)
	rand.Read(key)
	tmp, err := os.CreateTemp(filepath.Dir(path), approvalKeyFile+".*")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrApprovalKey, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return fmt.Errorf("%w: %w", ErrApprovalKey, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %w", ErrApprovalKey, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		err = errors.Join(d.Sync(), d.Close())
		if err != nil {
			return fmt.Errorf("%w: sync %s: %w", ErrApprovalKey, filepath.Dir(path), err)
		}
	}
	return nil
}

// held is the id of the approval of the message journaled as seq for
// target; a message not journaled (seq 0) gets a random one.
func (ids *approvalIDs) held(seq int64, target string) string {
	if seq <= 0 {
		return randomApprovalID()
	}
	mac := hmac.New(sha256.New, ids.key)
	mac.Write([]byte(strconv.FormatInt(seq, 10) + "\x00" + strings.ToLower(target)))
	return hex.EncodeToString(mac.Sum(nil)[:approvalIDBytes])
}

// approvalIDBytes is the length of an approval id, in bytes (twice as many
// hex digits).
const approvalIDBytes = 6

// randomApprovalID is a fresh random id.
func randomApprovalID() string {
	b := make([]byte, approvalIDBytes)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// legacyApprovalID is the id releases before the secret gave the approval
// of the message journaled as seq for target — computable by anyone who
// knows the seq. A data directory may still hold approvals under such ids:
// a re-delivered held message looks them up too.
func legacyApprovalID(seq int64, target string) string {
	h := sha256.Sum256([]byte(strconv.FormatInt(seq, 10) + "\x00" + strings.ToLower(target)))
	return hex.EncodeToString(h[:approvalIDBytes])
}
