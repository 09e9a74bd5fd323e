package auth

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth/authtest"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// t0 is the fake clock's start: 10 s into a TOTP step.
var t0 = time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)

// cheap are argon2id parameters fast enough for tests under -race.
var cheap = Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1}

// syncBuffer is a bytes.Buffer safe for concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// fixture is a Service over a fresh store with a fake clock and a captured
// log.
type fixture struct {
	svc   *Service
	st    *store.Store
	dir   string
	clock *authtest.Clock
	log   *syncBuffer
}

// newFixture opens a store in a temporary directory and a Service on it with
// cheap hashes and the fake clock at t0.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clock: authtest.NewClock(t0), log: &syncBuffer{}}
	f.open(t)
	return f
}

// open (re)opens the store and the Service on f.dir.
func (f *fixture) open(t *testing.T) {
	t.Helper()
	st, err := store.Open(f.dir, store.Options{Clock: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc, err := New(st, Options{
		Argon2:   cheap,
		Organism: "hello-world",
		Clock:    f.clock.Now,
		Logger:   slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.st, f.svc = st, svc
}

// close closes the store (before a reopen).
func (f *fixture) close(t *testing.T) {
	t.Helper()
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
}

// addUser adds a user and returns their TOTP secret.
func (f *fixture) addUser(t *testing.T, name, password string, role Role) string {
	t.Helper()
	url, err := f.svc.AddUser(context.Background(), name, password, role)
	if err != nil {
		t.Fatalf("AddUser(%q): %v", name, err)
	}
	return authtest.Secret(t, url)
}

// codeAt is secret's TOTP code at t.
func codeAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCode(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return code
}
