package federation

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestSeenHashesAppend: the hashes a commit records land on the seen
// table's last pages, not one random page each: with a table of many
// hashes, a commit of 32 more writes a few WAL frames (8; 57 keyed by
// the hash alone), not one (16 KiB) per hash. A hash recorded by an
// earlier version (no sent time in its key) is still found, and memory
// loads both kinds at the start.
func TestSeenHashesAppend(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "data"),
		store.Options{BatchDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)}) // only synchronous writes commit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore(t, st) })
	d, err := openDB(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.close() })
	start := time.Now()
	hash := func(i int) [32]byte { return sha256.Sum256(fmt.Append(nil, "answer-", i)) }
	sent := func(i int) time.Time { return start.Add(time.Duration(i) * time.Millisecond) }
	record := func(from, to int) {
		t.Helper()
		dones := make(chan error, to-from)
		for i := from; i < to; i++ {
			d.markSeenHash(hash(i), sent(i), start, func(err error) { dones <- err })
		}
		if err := d.write("commit", func(execer) error { return nil }); err != nil {
			t.Fatal(err)
		}
		for range to - from {
			if err := waitErr(t, dones); err != nil {
				t.Fatal(err)
			}
		}
	}
	const many, more = 20000, 32
	for i := 0; i < many; i += 1000 {
		record(i, i+1000)
	}
	before := st.Stats().WALFrames
	record(many, many+more)
	if n := st.Stats().WALFrames - before; n > 16 {
		t.Fatalf("a commit of %d hashes into a table of %d wrote %d WAL frames, want at most 16", more, many, n)
	} else {
		t.Logf("a commit of %d hashes into a table of %d wrote %d WAL frames", more, many, n)
	}

	// A hash an earlier version recorded, under the hash alone.
	legacy := hash(-1)
	if err := d.write("legacy", func(tx execer) error {
		_, err := tx.Exec(`INSERT INTO federation_seen (hash, at) VALUES (?, ?)`, legacy[:], start.UnixNano())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    [32]byte
		sent time.Time
		want bool
	}{
		{"recorded", hash(7), sent(7), true},
		{"recorded, another sent time", hash(7), sent(8), false},
		{"never recorded", hash(-2), sent(7), false},
		{"recorded by an earlier version", legacy, sent(3), true},
	} {
		got, err := d.seenHash(tc.h, tc.sent)
		if err != nil || got != tc.want {
			t.Errorf("%s: seen %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}

	r := newRecent(start)
	if err := r.load(d); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    [32]byte
		sent time.Time
	}{{"recorded", hash(7), sent(7)}, {"recorded by an earlier version", legacy, start}} {
		if dup, ok := r.checkSeen(tc.h, tc.sent, start); !ok || !dup {
			t.Errorf("%s: memory after load: seen %v, answers %v; want seen", tc.name, dup, ok)
		}
	}
}
