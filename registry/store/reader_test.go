package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// openReadOnly opens a Reader on dir and closes it at the end of the test.
func openReadOnly(t testing.TB, dir string) *Reader {
	t.Helper()
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatalf("OpenReadOnly(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestReadOnlyBesideWriter: a read-only reader opens a store another Store
// holds (no lock taken), sees what it committed, and does not keep a later
// Open from taking the lock.
func TestReadOnlyBesideWriter(t *testing.T) {
	s, dir := openTest(t, Options{})
	for i := range 5 {
		must(t, s.Append(testEntry(i, "t1")))
	}
	flush(t, s)

	r := openReadOnly(t, dir)
	got, err := r.Tail(10)
	must(t, err)
	want, err := s.Tail(10)
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("reader Tail differs from the writer's (-writer +reader):\n%s", d)
	}
	rep, err := r.Verify(context.Background(), nil)
	if err != nil || !rep.OK() || rep.Rows != 5 {
		t.Fatalf("Verify through the reader = %+v, %v", rep, err)
	}

	must(t, s.Close())
	s2 := openAt(t, dir, Options{}) // the reader holds no lock
	must(t, s2.Append(testEntry(5, "t1")))
	flush(t, s2)
	if n, err := r.Count(); err != nil || n != 6 {
		t.Fatalf("reader Count after the second writer = %d, %v; want 6", n, err)
	}
}

// TestReadOnlyAfterCleanClose: a store closed cleanly (WAL checkpointed and
// removed) opens read-only and reads.
func TestReadOnlyAfterCleanClose(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Append(testEntry(1, "t1")))
	must(t, s.Close())
	r := openReadOnly(t, dir)
	es, err := r.Thread("t1")
	if err != nil || len(es) != 1 || es[0].Seq != 1 {
		t.Fatalf("Thread = %+v, %v", es, err)
	}
	must(t, r.Close())
	if _, err := r.Count(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Count after Close = %v, want ErrClosed", err)
	}
	if err := r.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
}

// TestReadOnlyRefuses: no database, a database without a schema, a newer
// schema and an outdated schema are refused with their sentinel errors.
func TestReadOnlyRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  error
	}{
		{"no database", func(*testing.T, string) {}, ErrNoDatabase},
		{"empty database", func(t *testing.T, dir string) {
			_, err := rawDB(t, dir).Exec(`CREATE TABLE other (x)`)
			must(t, err)
		}, ErrNoDatabase},
		{"newer layout", func(t *testing.T, dir string) {
			s := openAt(t, dir, Options{})
			must(t, s.Close())
			_, err := rawDB(t, dir).Exec(`PRAGMA user_version = ` + fmt.Sprint(layoutVersion+1))
			must(t, err)
		}, ErrSchemaTooNew},
		{"legacy layout", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, DatabaseFileName), gunzip(t, "legacy-v11.db.gz"), 0o600))
		}, ErrSchemaOutdated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			_, statErr := os.Stat(filepath.Join(dir, DatabaseFileName))
			r, err := OpenReadOnly(dir)
			if err == nil {
				r.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("OpenReadOnly = %v, want %v", err, tt.want)
			}
			if _, after := os.Stat(filepath.Join(dir, DatabaseFileName)); (statErr == nil) != (after == nil) {
				t.Fatalf("OpenReadOnly changed whether the database exists: before %v, after %v", statErr, after)
			}
		})
	}
}

// TestFollowSeesEveryEntryOnce: while a writer appends from several
// goroutines (asynchronously and synchronously), a read-only reader
// following the journal sees every entry exactly once, in seq order.
func TestFollowSeesEveryEntryOnce(t *testing.T) {
	const writers, perWriter = 4, 150
	s, dir := openTest(t, Options{BatchRows: 16})
	must(t, s.Append(testEntry(0, "before")))
	flush(t, s)
	r := openReadOnly(t, dir)

	writeErr := make(chan error, writers)
	for g := range writers {
		go func() {
			for i := range perWriter {
				e := testEntry(i, fmt.Sprintf("w%d", g))
				var err error
				if i%10 == 0 {
					_, err = s.AppendSync(context.Background(), e)
				} else {
					err = s.Append(e)
				}
				if err != nil {
					writeErr <- err
					return
				}
			}
			writeErr <- nil
		}()
	}

	const total = 1 + writers*perWriter
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen []int64
	err := r.Follow(ctx, 0, time.Millisecond, func(e Entry) error {
		seen = append(seen, e.Seq)
		if len(seen) == total {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow = %v after %d of %d entries", err, len(seen), total)
	}
	for range writers {
		must(t, <-writeErr)
	}
	flush(t, s)
	for i, seq := range seen {
		if seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d: every seq once, in order, expected (seen %v…)", i, seq, seen[:i+1])
		}
	}
	if n, err := r.Count(); err != nil || n != total {
		t.Fatalf("Count = %d, %v; want %d", n, err, total)
	}
}

// TestFollowStopsOnCallbackError: Follow returns fn's error.
func TestFollowStopsOnCallbackError(t *testing.T) {
	s, dir := openTest(t, Options{})
	for i := range 3 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	stop := errors.New("stop")
	var got []int64
	err := openReadOnly(t, dir).Follow(context.Background(), 1, time.Millisecond, func(e Entry) error {
		got = append(got, e.Seq)
		return stop
	})
	if !errors.Is(err, stop) || !cmp.Equal(got, []int64{2}) {
		t.Fatalf("Follow = %v after %v; want stop after [2]", err, got)
	}
}

// TestReadOnlyAfterKill9: right after a writer is killed, before any Open
// recovers the store, a read-only reader sees every confirmed commit and
// the journal verifies (journal verify on a crashed organism's directory).
func TestReadOnlyAfterKill9(t *testing.T) {
	dir := t.TempDir()
	confirmed := crashCycle(t, dir, 200)
	r := openReadOnly(t, dir)
	entries, err := r.After(0, 0)
	must(t, err)
	bySeq := make(map[int64][32]byte, len(entries))
	for _, e := range entries {
		bySeq[e.Seq] = e.SHA256
	}
	for seq, sum := range confirmed {
		if got, ok := bySeq[seq]; !ok || got != sum {
			t.Fatalf("confirmed seq %d: present %v, same bytes %v", seq, ok, got == sum)
		}
	}
	rep, err := r.Verify(context.Background(), nil)
	if err != nil || !rep.OK() {
		t.Fatalf("Verify through the reader after kill -9 = %v, %v", rep.Faults, err)
	}
	must(t, r.Close())
	checkAfterCrash(t, dir, confirmed) // and a writer still recovers the store afterwards
}

// TestThreadEnds: every thread (dead letters without one under "") maps to
// the seq of its last entry.
func TestThreadEnds(t *testing.T) {
	s, _ := openTest(t, Options{})
	got, err := s.ThreadEnds()
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("ThreadEnds of an empty journal = %v", got)
	}
	for i, th := range []string{"a", "b", "a", "c", "b", "a"} {
		must(t, s.Append(testEntry(i, th)))
	}
	dead := testEntry(6, "")
	dead.Kind, dead.Conversation = DeadLetter, ""
	must(t, s.Append(dead))
	flush(t, s)
	got, err = s.ThreadEnds()
	must(t, err)
	if d := cmp.Diff(map[string]int64{"a": 6, "b": 5, "c": 4, "": 7}, got); d != "" {
		t.Fatalf("ThreadEnds (-want +got):\n%s", d)
	}
}
