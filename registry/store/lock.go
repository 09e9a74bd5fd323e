package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFileName is the name of the lock file inside the data directory.
const lockFileName = "LOCK"

// dirLock is an exclusive flock on dir/LOCK, held for the Store's lifetime.
// flock locks belong to the open file description, so a second lock attempt
// fails both from another process and from this one.
type dirLock struct {
	f *os.File
}

// lockDir takes the exclusive lock on dir and writes this process's pid into
// the lock file. It fails with ErrLocked, naming the directory and the
// holder's pid, when the lock is held.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by pid %s", ErrLocked, dir, holder)
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: write lock file: %w", err)
	}
	if _, err := f.WriteAt(pid, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: write lock file: %w", err)
	}
	return &dirLock{f: f}, nil
}

// readHolder returns the pid recorded in the lock file, or "unknown".
func readHolder(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid := strings.TrimSpace(string(buf[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "unknown"
	}
	return pid
}

// unlock releases the lock. The file is kept: removing it would let a
// concurrent opener lock an unlinked inode.
func (l *dirLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("store: unlock: %w", err)
	}
	return nil
}
