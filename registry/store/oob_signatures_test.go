package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStoreRemembersSignatures: the store keeps a signature until its
// expiry, keeps the later expiry of a signature recorded twice, and
// forgets expired ones when recording.
func TestStoreRemembersSignatures(t *testing.T) {
	st, err := Open(t.TempDir(), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	must(t, st.RememberSignature(ctx, []byte("a"), now.Add(time.Minute), now))
	must(t, st.RememberSignature(ctx, []byte("b"), now.Add(time.Second), now))
	must(t, st.RememberSignature(ctx, []byte("a"), now.Add(30*time.Second), now))
	got := map[string]time.Time{}
	read := func(at time.Time) {
		clear(got)
		must(t, st.RememberedSignatures(ctx, at, func(sig []byte, exp time.Time) { got[string(sig)] = exp }))
	}
	read(now)
	if len(got) != 2 || !got["a"].Equal(now.Add(time.Minute)) {
		t.Fatalf("remembered %v", got)
	}
	read(now.Add(2 * time.Second))
	if len(got) != 1 {
		t.Fatalf("remembered after b expired: %v", got)
	}
	must(t, st.RememberSignature(ctx, []byte("c"), now.Add(2*time.Minute), now.Add(90*time.Second)))
	read(now)
	if _, ok := got["a"]; ok || len(got) != 1 {
		t.Fatalf("expired signatures kept: %v", got)
	}
	if err := st.RememberSignature(ctx, nil, now, now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty signature: %v", err)
	}
}
