package command

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A program's working directory is made in the temp directory (TMPDIR) and
// removed when its call ends; an organism killed during a call (kill -9, a
// crash) leaves it behind. So each organism process marks the directories
// it makes as its own: it holds a lock file, xmlpipe-run-TOKEN.lock
// (flock, for as long as the process lives; TOKEN is random), and names
// each directory xmlpipe-run-TOKEN-*. A lock file nobody holds is the mark
// of a dead process: SweepStale removes its directories, then the lock
// file. A live organism's directories are never touched (its lock is
// held), nor anything another user owns, nor the directories of an older
// xmlpipe (xmlpipe-run-DIGITS: no mark says whether their owner lives).

// Names of the marked directories and lock files in the temp directory.
const (
	runPrefix  = "xmlpipe-run-"
	lockSuffix = ".lock"
	tokenBytes = 8
)

// marks are this process's marks, by temp directory (TMPDIR may change
// while it runs): each a token and its lock file, held open (locked) for
// the process's life.
var marks struct {
	mu     sync.Mutex
	tokens map[string]string
	locks  []*os.File
}

// ownToken returns this process's token in the temp directory tmp, taking
// its lock — and sweeping the stale directories of dead processes there —
// when it has none there yet.
func ownToken(tmp string) (string, error) {
	marks.mu.Lock()
	defer marks.mu.Unlock()
	if token, ok := marks.tokens[tmp]; ok {
		return token, nil
	}
	token, f, err := lockToken(tmp)
	if err != nil {
		return "", err
	}
	if marks.tokens == nil {
		marks.tokens = map[string]string{}
	}
	marks.tokens[tmp] = token
	marks.locks = append(marks.locks, f)
	_, _ = sweep(tmp, token) // best effort: a failure costs only disk space
	return token, nil
}

// lockToken makes a new token's lock file in tmp, locked: made and locked
// under a temporary name, then renamed, so no sweeper ever sees it
// unlocked.
func lockToken(tmp string) (string, *os.File, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	token := hex.EncodeToString(b[:])
	f, err := os.CreateTemp(tmp, "xmlpipe-lock-")
	if err != nil {
		return "", nil, fmt.Errorf("run_command: working directory lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return "", nil, errors.Join(fmt.Errorf("run_command: working directory lock: %w", err), f.Close(), os.Remove(f.Name()))
	}
	if err := os.Rename(f.Name(), filepath.Join(tmp, runPrefix+token+lockSuffix)); err != nil {
		return "", nil, errors.Join(fmt.Errorf("run_command: working directory lock: %w", err), f.Close(), os.Remove(f.Name()))
	}
	return token, f, nil
}

// workDir makes the program's private, empty working directory, owned by
// the user it runs as, marked as this process's.
func workDir(cred *syscall.Credential) (string, error) {
	tmp := os.TempDir()
	token, err := ownToken(tmp)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(tmp, runPrefix+token+"-")
	if err != nil {
		return "", fmt.Errorf("run_command: working directory: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", errors.Join(fmt.Errorf("run_command: working directory: %w", err), os.RemoveAll(dir))
		}
	}
	return dir, nil
}

// SweepStale removes the working directories that organisms killed during
// a call left in the temp directory (TMPDIR), and returns how many. It
// takes this process's own mark first (it never sweeps itself), and
// touches only what dead processes of this user marked. An organism calls
// it at start; the first call of run_command does too.
func SweepStale() (int, error) {
	tmp := os.TempDir()
	token, err := ownToken(tmp)
	if err != nil {
		return 0, err
	}
	return sweep(tmp, token)
}

// sweep removes, in tmp, the marked directories of every lock file this
// user owns that no process holds (but own's), then the lock file; and
// the marked directories this user owns whose lock file is gone (a sweep
// cut short).
func sweep(tmp, own string) (int, error) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return 0, fmt.Errorf("run_command: sweep %s: %w", tmp, err)
	}
	locks := map[string]bool{}
	dirs := map[string][]string{}
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, runPrefix)
		if !ok {
			continue
		}
		if token, ok := strings.CutSuffix(rest, lockSuffix); ok && isToken(token) && e.Type().IsRegular() {
			locks[token] = true
			continue
		}
		if token, _, ok := strings.Cut(rest, "-"); ok && isToken(token) && e.IsDir() {
			dirs[token] = append(dirs[token], name)
		}
	}
	removed := 0
	var errs []error
	euid := os.Geteuid()
	for token := range locks {
		if token == own {
			continue
		}
		n, err := sweepLocked(tmp, token, dirs[token], euid)
		removed += n
		if err != nil {
			errs = append(errs, err)
		}
		delete(dirs, token)
	}
	for token, names := range dirs {
		if token == own {
			continue
		}
		for _, name := range names {
			path := filepath.Join(tmp, name)
			if !ownedBy(path, euid) {
				continue
			}
			if err := os.RemoveAll(path); err != nil {
				errs = append(errs, err)
				continue
			}
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// sweepLocked removes token's directories names and its lock file when
// the lock file is euid's and no process holds it.
func sweepLocked(tmp, token string, names []string, euid int) (int, error) {
	path := filepath.Join(tmp, runPrefix+token+lockSuffix)
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil // another sweeper's
		}
		return 0, nil // not this user's to open: not this user's to sweep
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || int(st.Uid) != euid || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, nil
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return 0, nil // held: its process lives
	}
	removed := 0
	var errs []error
	for _, name := range names {
		if err := os.RemoveAll(filepath.Join(tmp, name)); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if len(errs) == 0 {
		// Unlinked while locked: a sweeper opening it now finds it
		// unlocked but its directories gone.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// isToken reports whether s is a token: tokenBytes in lower-case hex.
func isToken(s string) bool {
	if len(s) != 2*tokenBytes {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ownedBy reports whether path (not followed) is uid's.
func ownedBy(path string, uid int) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && int(st.Uid) == uid
}
