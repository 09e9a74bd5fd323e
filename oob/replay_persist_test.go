package oob

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestReplayCachePersistsAcrossRestarts: with the cache persisted in the
// organism's store, a signed shutdown accepted once is refused by a new
// process's cache loaded from the store (within the window), and the
// stopper is not called again; once the window has passed the store
// forgets it.
func TestReplayCachePersistsAcrossRestarts(t *testing.T) {
	first := NewReplayCache(0)
	f := newFixture(t, func(o *Options) { o.Replay = first })
	st := f.org.Store()
	if err := first.Persist(context.Background(), st, f.clock()); err != nil {
		t.Fatal(err)
	}
	req := f.sign(t, "captured", `<shutdown xmlns="`+NS+`"><mode>graceful</mode></shutdown>`)
	if c := code(f.handle(t, req)); c != "" {
		t.Fatalf("first shutdown: %s", c)
	}
	select {
	case <-f.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the first shutdown did not stop the organism")
	}

	// A new process: a fresh cache, loaded from the store, 30 s later.
	f.advance(30 * time.Second)
	second := NewReplayCache(0)
	if err := second.Persist(context.Background(), st, f.clock()); err != nil {
		t.Fatal(err)
	}
	opts := f.srv.opts
	opts.Replay = second
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if c := code(mustResponse(t, srv.Handle(req))); c != CodeReplayed {
		t.Fatalf("replayed after the restart: %q, want %s", c, CodeReplayed)
	}
	select {
	case reason := <-f.stopped:
		t.Fatalf("the replayed shutdown stopped the organism again (%s)", reason)
	default:
	}

	// Past the window the signature is forgotten by the store too.
	n := 0
	if err := st.RememberedSignatures(context.Background(), f.clock().Add(2*f.srv.opts.Window), func([]byte, time.Time) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d signatures remembered past the window", n)
	}
}

// failingStore is a ReplayStore that cannot record.
type failingStore struct{}

func (failingStore) RememberSignature(context.Context, []byte, time.Time, time.Time) error {
	return errors.New("disk full")
}

func (failingStore) RememberedSignatures(context.Context, time.Time, func([]byte, time.Time)) error {
	return nil
}

// TestReplayCacheRefusesWhatItCannotRecord: a request whose signature
// cannot be recorded is refused (it could be replayed after a restart),
// and stays refused.
func TestReplayCacheRefusesWhatItCannotRecord(t *testing.T) {
	cache := NewReplayCache(0)
	if err := cache.Persist(context.Background(), failingStore{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Replay = cache })
	req := f.sign(t, "unrecorded", `<get-status xmlns="`+NS+`"/>`)
	if c := code(f.handle(t, req)); c != CodeInternal {
		t.Fatalf("unrecorded request: %q, want %s", c, CodeInternal)
	}
	if c := code(f.handle(t, req)); c != CodeReplayed {
		t.Fatalf("the same request again: %q, want %s", c, CodeReplayed)
	}
}
