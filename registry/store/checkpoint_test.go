package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCheckpointKeepsTheWALBounded: with the automatic checkpoint off, the
// background checkpoints and the writer's catch-ups keep the WAL file near
// its threshold while commits write many times that many frames, with
// a reader reading all along; the writer's commits never checkpoint
// (wal_autocheckpoint = 0), and the data is all there after a reopen.
func TestCheckpointKeepsTheWALBounded(t *testing.T) {
	const (
		frames   = 64  // checkpoint threshold, in WAL frames: many batches
		maxWAL   = 256 // bound on the WAL file, in frames of 16 KiB
		rounds   = 300
		perRound = 10
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
	total := rounds + rounds/2
	for walLog() > 3*frames {
		if total == 3*rounds {
			t.Fatalf("the WAL still held %d frames at the last catch-up, %d batches after the reader stopped",
				walLog(), total-rounds-rounds/2)
		}
		round(total)
		total++
	}

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
	if n, err := s2.Count(); err != nil || n != int64(total*perRound) {
		t.Fatalf("reopened Count = %d, %v; want %d", n, err, total*perRound)
	}
	slots, err := s2.LoadSlots()
	if err != nil || len(slots) != total*perRound {
		t.Fatalf("reopened LoadSlots = %d rows, %v; want %d", len(slots), err, total*perRound)
	}
}

// TestCheckpointCopiesTheWAL: once the commits have appended the
// threshold's frames, the checkpointer copies the WAL into the database file
// beside the writer and the writer catches up after a later batch; Close
// stops the checkpointer, and a request after that neither blocks nor
// panics.
func TestCheckpointCopiesTheWAL(t *testing.T) {
	s, dir := openTest(t, Options{checkpointFrames: 1})
	db := filepath.Join(dir, DatabaseFileName)
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		e := testEntry(i, "t")
		e.Bytes = append(e.Bytes, strings.Repeat("y", 64<<10)...)
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Checkpoints > 0 && st.CatchUps > 0 {
			if st.CheckpointTime <= 0 || st.CatchUpTime <= 0 {
				t.Fatalf("checkpoints took %v, catch-ups %v", st.CheckpointTime, st.CatchUpTime)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint and catch-up after %d commits: %+v", i+1, s.Stats())
		}
	}
	after, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() < before.Size()+64<<10 {
		t.Errorf("database file %d bytes after the checkpoints (%d before), want a 64 KiB entry copied in",
			after.Size(), before.Size())
	}
	ckpt := s.w.ckpt
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ckpt.exited:
	default:
		t.Fatal("checkpointer still running after Close")
	}
	ckpt.request()
}
