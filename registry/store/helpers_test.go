package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injectable, advanceable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// newFakeClock starts a clock at a fixed instant with nanoseconds set, so
// round trips that lose precision show.
func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)}
}

// Now returns the current fake time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// quietLogger discards log output so expected failures do not clutter the
// test output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openTest opens a store in a fresh temporary directory and closes it at
// the end of the test (a Close error fails the test unless it was closed).
func openTest(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	return openAt(t, dir, opts), dir
}

// openAt opens a store in dir with cleanup.
func openAt(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testEntry returns a valid journal entry numbered i.
func testEntry(i int, thread string) Entry {
	return Entry{
		Thread:       thread,
		Conversation: "conv-" + thread,
		Direction:    Inbound,
		Kind:         Message,
		From:         "greeter",
		To:           "shouter",
		Listener:     "shouter",
		PayloadTag:   "Greeting",
		Bytes:        fmt.Appendf(nil, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>greeter</from><thread>%s</thread></meta><Greeting><Name>n%d</Name></Greeting></message>`, thread, i),
	}
}

// flush flushes s and fails the test on error.
func flush(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// sha256Of returns the SHA-256 of b.
func sha256Of(b []byte) [32]byte { return sha256.Sum256(b) }

// deliveredSeqs returns, in order, the journaled messages to a listener
// that are delivered (at or below the watermark, or marked above it).
func deliveredSeqs(t testing.TB, s *Store) []int64 {
	t.Helper()
	entries, err := s.After(0, 0)
	must(t, err)
	undelivered, err := s.Undelivered()
	must(t, err)
	open := map[int64]bool{}
	for _, e := range undelivered {
		open[e.Seq] = true
	}
	var out []int64
	for i := range entries {
		if e := &entries[i]; e.Kind == Message && e.Listener != "" && !open[e.Seq] {
			out = append(out, e.Seq)
		}
	}
	return out
}
