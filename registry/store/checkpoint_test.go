package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCheckpointKeepsTheWALBounded: with the automatic checkpoint off, the
// writer's checkpoints between batches keep the WAL file near its threshold
// while commits write many times that many frames, with
// a reader reading all along; the writer's commits never checkpoint
// (wal_autocheckpoint = 0), and the data is all there after a reopen.
func TestCheckpointKeepsTheWALBounded(t *testing.T) {
	const (
		frames   = 32  // checkpoint threshold, in WAL frames
		maxWAL   = 256 // bound on the WAL file, in frames of 16 KiB
		rounds   = 40
		perRound = 100
	)
	s, dir := openTest(t, Options{checkpointFrames: frames})
	wal := filepath.Join(dir, DatabaseFileName+"-wal")

	var auto int64
	if _, err := s.do(context.Background(), "read wal_autocheckpoint", func(w *writer) (int64, error) {
		var err error
		auto, err = w.conn.queryInt64(`PRAGMA wal_autocheckpoint`)
		return 0, err
	}); err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Fatalf("writer wal_autocheckpoint = %d, want 0: its commits would checkpoint", auto)
	}

	f := kernelFixture{at: newFakeClock().Now()}
	body := strings.Repeat("x", 3000)
	round := func(r int) {
		t.Helper()
		for i := range perRound {
			e := testEntry(r*perRound+i, fmt.Sprintf("t%d", i%7))
			e.Bytes = append(e.Bytes, body...)
			if err := s.Append(e); err != nil {
				t.Fatal(err)
			}
			if err := s.PutSlot(f.slot(fmt.Sprintf("s%d", i), r, body)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	walLog := func() int64 {
		t.Helper()
		var log int64
		if _, err := s.do(context.Background(), "read walLog", func(w *writer) (int64, error) {
			log = w.walLog
			return 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		return log
	}

	// Alone, the writer keeps the WAL file itself short.
	var peak int64
	for r := range rounds {
		round(r)
		if fi, err := os.Stat(wal); err == nil {
			peak = max(peak, fi.Size())
		}
	}
	alone := s.Stats().WALFrames

	// A reader reading without a pause keeps the WAL from starting over
	// (as it does with SQLite's own checkpoint); once it stops, the next
	// batches' checkpoints bring the WAL back to a few batches.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Count(); err != nil {
				t.Errorf("Count while writing: %v", err)
				return
			}
		}
	}()
	for r := range rounds / 2 {
		round(rounds + r)
	}
	close(stop)
	readers.Wait()
	for r := range 4 {
		round(rounds + rounds/2 + r)
	}
	if got := walLog(); got > 4*frames {
		t.Errorf("the last checkpoint found %d frames in the WAL after the reader stopped, want ≤ %d", got, 4*frames)
	}
	const total = rounds + rounds/2 + 4

	st := s.Stats()
	if alone < 4*maxWAL {
		t.Fatalf("the commits wrote %d WAL frames: too few to show a bound of %d", alone, maxWAL)
	}
	if st.Checkpoints == 0 {
		t.Fatalf("no checkpoint ran for %d frames", st.WALFrames)
	}
	if limit := int64(maxWAL) * (16384 + 24); peak > limit {
		t.Errorf("WAL file peaked at %d bytes (%d frames written, %d checkpoints), want ≤ %d", peak, alone,
			st.Checkpoints, limit)
	}
	t.Logf("%d frames written, %d checkpoints in %v, WAL peak %d KiB", st.WALFrames, st.Checkpoints,
		st.CheckpointTime, peak>>10)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(wal); err == nil && fi.Size() != 0 {
		t.Errorf("WAL after Close is %d bytes, want 0 (truncated)", fi.Size())
	}
	s2 := openAt(t, dir, Options{})
	if n, err := s2.Count(); err != nil || n != total*perRound {
		t.Fatalf("reopened Count = %d, %v; want %d", n, err, total*perRound)
	}
	slots, err := s2.LoadSlots()
	if err != nil || len(slots) != total*perRound {
		t.Fatalf("reopened LoadSlots = %d rows, %v; want %d", len(slots), err, total*perRound)
	}
}

// TestCheckpointCopiesTheWAL: once the commits have appended the
// threshold's frames, the writer checkpoints after the batch (the database
// file grows by what the WAL held) and counts it.
func TestCheckpointCopiesTheWAL(t *testing.T) {
	s, dir := openTest(t, Options{checkpointFrames: 1})
	db := filepath.Join(dir, DatabaseFileName)
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	e := testEntry(1, "t")
	e.Bytes = append(e.Bytes, strings.Repeat("y", 64<<10)...)
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The checkpoint follows the batch that Flush waited for: a second
	// flush is answered after it.
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Checkpoints == 0 || st.CheckpointTime <= 0 {
		t.Fatalf("%d checkpoints in %v after %d frames, want ≥ 1", st.Checkpoints, st.CheckpointTime, st.WALFrames)
	}
	after, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() < before.Size()+64<<10 {
		t.Errorf("database file %d bytes after the checkpoint (%d before), want the 64 KiB entry copied in",
			after.Size(), before.Size())
	}
}
