package federation

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestSeenHashesAppend: the hashes a commit records land on the seen
// table's last pages, not one random page each: with a table of many
// hashes, a commit of 32 more writes a few WAL frames (4; 8 with an index
// on at; 57 keyed by the hash alone), not one (16 KiB) per hash. A hash
// an earlier version recorded (no sent time in its key) in its state is
// still found, and memory loads both kinds at the start.
func TestSeenHashesAppend(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "data"),
		store.Options{BatchDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)}) // only synchronous writes commit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore(t, st) })
	start := time.Now()
	hash := func(i int) [32]byte { return sha256.Sum256(fmt.Append(nil, "answer-", i)) }
	// A hash an earlier version recorded, under the hash alone.
	legacy := hash(-1)
	earlierSeen(t, st, legacy, start)
	d, err := openDB(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.close() })
	if !d.legacySeen.Load() {
		t.Fatal("a state of an earlier version with hashes: not marked as holding hashes keyed by the hash alone")
	}
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

// earlierSeen makes in st the seen table of an earlier version — with its
// index on at — holding hash h, recorded at at under the hash alone.
func earlierSeen(t *testing.T, st *store.Store, h [32]byte, at time.Time) {
	t.Helper()
	ddl := `CREATE TABLE federation_seen (hash BLOB PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
		CREATE INDEX federation_seen_at ON federation_seen(at);
		INSERT INTO federation_seen (hash, at) VALUES (x'` + fmt.Sprintf("%x", h[:]) + `', ` + fmt.Sprint(at.UnixNano()) + `);`
	if err := st.AddSchema(context.Background(), "an earlier federation state", ddl); err != nil {
		t.Fatal(err)
	}
}

// TestSeenCommitsOnePage: a commit of a few hashes writes the seen table's
// last pages and no index page beside them: 1.5 WAL frames of 16 KiB
// where an index on at made it 3.
func TestSeenCommitsOnePage(t *testing.T) {
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
	n := 0
	record := func(k int) {
		t.Helper()
		dones := make(chan error, k)
		for range k {
			n++
			d.markSeenHash(sha256.Sum256(fmt.Append(nil, "answer-", n)), start.Add(time.Duration(n)*time.Millisecond),
				start, func(err error) { dones <- err })
		}
		if err := d.write("commit", func(execer) error { return nil }); err != nil {
			t.Fatal(err)
		}
		for range k {
			if err := waitErr(t, dones); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 20 {
		record(1000)
	}
	const commits = 100
	before := st.Stats().WALFrames
	for range commits {
		record(8)
	}
	perCommit := float64(st.Stats().WALFrames-before) / commits
	if perCommit > 2 {
		t.Fatalf("a commit of 8 hashes into a table of 20,000 wrote %.2f WAL frames, want at most 2", perCommit)
	}
	t.Logf("a commit of 8 hashes into a table of 20,000 wrote %.2f WAL frames", perCommit)
	var indexes int
	if err := d.b.reads().QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'federation_seen'
		AND sql IS NOT NULL`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if indexes != 0 {
		t.Fatalf("federation_seen has %d indexes beside its key, want none", indexes)
	}
}

// TestSeenSweep: the sweep drops a hash once the sent time its key begins
// with is older than keep — a copy sent then is refused as stale before
// its hash is looked up — whenever it was received, and one an earlier
// version keyed by the hash alone once it was recorded longer ago than
// keep; with none of those left, the state is no longer marked as holding
// them, and a state that had the at index but no hashes never was.
func TestSeenSweep(t *testing.T) {
	const keep = time.Hour
	now := time.Now()
	h := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	for _, tc := range []struct {
		name    string
		earlier bool // made by an earlier version, with one old legacy hash
		rows    []struct {
			name     string
			sent, at time.Duration // before now
		}
		want []string // the names left after the sweep
	}{
		{name: "keyed by sent time", rows: []struct {
			name     string
			sent, at time.Duration
		}{
			{"sent and received long ago", 2 * keep, 2 * keep},
			{"sent long ago, received lately", keep + time.Minute, time.Minute},
			{"sent lately", keep - time.Minute, keep - time.Minute},
			{"sent in the future", -4 * time.Minute, 0},
		}, want: []string{"sent lately", "sent in the future"}},
		{name: "an earlier version's state", earlier: true, rows: []struct {
			name     string
			sent, at time.Duration
		}{{"sent lately", time.Minute, time.Minute}}, want: []string{"sent lately"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(filepath.Join(t.TempDir(), "data"),
				store.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeStore(t, st) })
			if tc.earlier {
				earlierSeen(t, st, h("legacy, recorded long ago"), now.Add(-2*keep))
			}
			d, err := openDB(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.close() })
			if d.legacySeen.Load() != tc.earlier {
				t.Fatalf("marked as holding legacy hashes: %v, want %v", d.legacySeen.Load(), tc.earlier)
			}
			names := map[[32]byte]string{}
			if err := d.write("rows", func(tx execer) error {
				for _, r := range tc.rows {
					names[h(r.name)] = r.name
					if _, err := tx.Exec(`INSERT INTO federation_seen (hash, at) VALUES (?, ?)`,
						seenKey(h(r.name), now.Add(-r.sent)), now.Add(-r.at).UnixNano()); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := d.sweep(now, keep, keep); err != nil {
				t.Fatal(err)
			}
			var left []string
			rows, err := d.b.reads().Query(`SELECT hash FROM federation_seen ORDER BY hash`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var k []byte
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				var hk [32]byte
				copy(hk[:], k[len(k)-32:])
				left = append(left, names[hk])
			}
			if diff := cmp.Diff(tc.want, left); diff != "" {
				t.Fatalf("hashes left after the sweep (-want +got):\n%s", diff)
			}
			if d.legacySeen.Load() {
				t.Fatal("still marked as holding legacy hashes once they are gone")
			}
			var marks int
			if err := d.b.reads().QueryRow(`SELECT count(*) FROM federation_seen_legacy`).Scan(&marks); err != nil || marks != 0 {
				t.Fatalf("federation_seen_legacy: %d rows, %v; want none", marks, err)
			}
		})
	}
}
