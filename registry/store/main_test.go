package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Child-process modes: the test binary re-executes itself with envChild set
// to one of these and envChildDir naming the data directory.
const (
	envChild     = "XMLPIPE_STORE_TEST_CHILD"
	envChildDir  = "XMLPIPE_STORE_TEST_DIR"
	childLock    = "lock"
	childAppend  = "append"
	childDeliver = "deliver"
	childGroup   = "group"
	childOKExit  = 0
	childBadExit = 3
)

// TestMain dispatches to a child mode when the binary was re-executed by a
// test, and runs the tests otherwise.
func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case childLock:
		os.Exit(lockChild(os.Getenv(envChildDir)))
	case childAppend:
		os.Exit(appendChild(os.Getenv(envChildDir)))
	case childDeliver:
		os.Exit(deliverChild(os.Getenv(envChildDir)))
	case childGroup:
		os.Exit(groupChild(os.Getenv(envChildDir)))
	case childDiskFull:
		os.Exit(diskFullChild(os.Getenv(envChildDir)))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// lockChild tries to open a store the parent holds. It prints the error and
// exits 0 when Open fails with ErrLocked.
func lockChild(dir string) int {
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err == nil {
		s.Close()
		fmt.Println("OPENED")
		return childBadExit
	}
	fmt.Println("ERR", err)
	if !errors.Is(err, ErrLocked) {
		return childBadExit
	}
	return childOKExit
}

// appendChild appends journal entries forever from four goroutines with
// AppendSync (plus asynchronous Appends in between) and prints
// "SEQ <seq> <sha256>" after each confirmed commit, until it is killed.
func appendChild(dir string) int {
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err != nil {
		fmt.Println("ERR", err)
		return childBadExit
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				e := testEntry(i, fmt.Sprintf("child-%d", g))
				if i%3 == 0 {
					if err := s.Append(testEntry(-i, fmt.Sprintf("async-%d", g))); err != nil {
						fmt.Println("ERR", err)
						os.Exit(childBadExit)
					}
				}
				seq, err := s.AppendSync(context.Background(), e)
				if err != nil {
					fmt.Println("ERR", err)
					os.Exit(childBadExit)
				}
				out.Lock()
				fmt.Printf("SEQ %d %x\n", seq, sha256.Sum256(e.Bytes))
				out.Unlock()
			}
		})
	}
	wg.Wait()
	return childOKExit
}

// childGORACE keeps the race detector's one-second exit delay out of child
// processes, preserving any GORACE options already set.
func childGORACE() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
