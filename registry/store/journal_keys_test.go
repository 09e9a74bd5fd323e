package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// keyParts returns the partitions that have lookup keys.
func keyParts(t testing.TB, s *Store) []int64 {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT DISTINCT part FROM journal_keys ORDER BY part`)
	must(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var p int64
		must(t, rows.Scan(&p))
		out = append(out, p)
	}
	must(t, rows.Err())
	return out
}

// keyBlob reads the lookup keys of part in k's bucket.
func keyBlob(t testing.TB, s *Store, part int64, k uint64) []byte {
	t.Helper()
	var blob []byte
	must(t, s.rdb.QueryRow(`SELECT keys FROM journal_keys WHERE part = ? AND bucket = ?`, part, keyBucket(k)).Scan(&blob))
	return blob
}

// appendThreads appends n entries, entry i on thread t<i%threads> and
// conversation c<i%convs>, and returns their seqs by thread.
func appendThreads(t testing.TB, s *Store, n, threads int) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for i := range n {
		th := fmt.Sprintf("t%d", i%threads)
		e := testEntry(i, th)
		seq, err := s.AppendSeq(e)
		must(t, err)
		out[th] = append(out[th], seq)
	}
	flush(t, s)
	return out
}

// threadSeqs returns the seqs Thread finds for id.
func threadSeqs(t testing.TB, r *Reader, id string) []int64 {
	t.Helper()
	es, err := r.Thread(id)
	must(t, err)
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// TestLookupKeysOfClosedPartitions: appending the first seq of a partition
// writes the lookup keys of the partition before it, and every row of a
// closed partition is found through them under its thread and its
// conversation.
func TestLookupKeysOfClosedPartitions(t *testing.T) {
	s, _ := openTest(t, Options{})
	const n = 3<<journalPartitionBits + 10 // seqs 1..3082: partitions 0–2 closed, 3 open
	appendThreads(t, s, n, 101)
	if d := cmp.Diff([]int64{0, 1, 2}, keyParts(t, s)); d != "" {
		t.Fatalf("partitions with lookup keys (-want +got):\n%s", d)
	}
	es, err := s.After(0, 0)
	must(t, err)
	for _, e := range es {
		p := partitionOf(e.Seq)
		if p > 2 {
			continue
		}
		for _, k := range []uint64{lookupKey(keyThread, e.Thread), lookupKey(keyConversation, e.Conversation)} {
			if !slices.Contains(keySeqs(p, keyBlob(t, s, p, k), k), e.Seq) {
				t.Fatalf("seq %d (thread %s) missing from the lookup keys of partition %d", e.Seq, e.Thread, p)
			}
		}
	}
}

// TestLookupKeyCollisionIsChecked: a key record pointing at a row of
// another thread (what a hash collision looks like) is not returned.
func TestLookupKeyCollisionIsChecked(t *testing.T) {
	s, _ := openTest(t, Options{})
	want := appendThreads(t, s, 2<<journalPartitionBits, 7)
	k := lookupKey(keyThread, "t3")
	blob := keyBlob(t, s, 0, k)
	var recs []uint64
	for i := 0; i < len(blob); i += keyRecordSize {
		recs = append(recs, binary.BigEndian.Uint64(blob[i:]))
	}
	forged := want["t4"][2] // a row of t4 in partition 0
	recs = append(recs, keyRecord(k, forged))
	slices.Sort(recs)
	var out []byte
	for _, r := range recs {
		out = binary.BigEndian.AppendUint64(out, r)
	}
	_, err := s.do(context.Background(), "forge", func(w *writer) (int64, error) {
		return w.exec(`UPDATE journal_keys SET keys = ? WHERE part = 0 AND bucket = ?`, out, keyBucket(k))
	})
	must(t, err)
	if !slices.Contains(keySeqs(0, keyBlob(t, s, 0, k), k), forged) {
		t.Fatal("the forged record is not in the keys")
	}
	if d := cmp.Diff(want["t3"], threadSeqs(t, s.Reader, "t3")); d != "" {
		t.Errorf("Thread(t3) (-want +got):\n%s", d)
	}
}

// TestLookupKeysCatchUp: a store whose lookup keys are missing (as after
// the migration that introduced them) answers lookups by scanning, and the
// writer summarises the closed partitions when it starts.
func TestLookupKeysCatchUp(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir, Options{})
	want := appendThreads(t, s, 3<<journalPartitionBits+5, 13)
	must(t, s.Close())
	db := rawDB(t, dir)
	_, err := db.Exec(`DELETE FROM journal_keys`)
	must(t, err)
	must(t, db.Close())

	r, err := OpenReadOnly(dir)
	must(t, err)
	if d := cmp.Diff(want["t5"], threadSeqs(t, r, "t5")); d != "" {
		t.Errorf("Thread(t5) without lookup keys (-want +got):\n%s", d)
	}
	must(t, r.Close())

	s = openAt(t, dir, Options{})
	flush(t, s) // answered after the writer's catch-up
	if d := cmp.Diff([]int64{0, 1, 2}, keyParts(t, s)); d != "" {
		t.Errorf("partitions with lookup keys after the catch-up (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want["t5"], threadSeqs(t, s.Reader, "t5")); d != "" {
		t.Errorf("Thread(t5) after the catch-up (-want +got):\n%s", d)
	}
}

// TestLookupKeysAcrossRestart: a partition written partly before a restart
// and partly after is summarised with the rows of both (the writer reads back
// the rows it did not insert itself).
func TestLookupKeysAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir, Options{})
	before := appendThreads(t, s, 1<<journalPartitionBits+100, 5) // partition 1 half full
	must(t, s.Close())
	s = openAt(t, dir, Options{})
	after := appendThreads(t, s, 1<<journalPartitionBits, 5) // closes partition 1
	if d := cmp.Diff([]int64{0, 1}, keyParts(t, s)); d != "" {
		t.Fatalf("partitions with lookup keys (-want +got):\n%s", d)
	}
	want := append(before["t2"], after["t2"]...)
	var inOne int
	for _, seq := range want {
		if partitionOf(seq) == 1 {
			inOne++
		}
	}
	k := lookupKey(keyThread, "t2")
	if got := len(keySeqs(1, keyBlob(t, s, 1, k), k)); got != inOne {
		t.Errorf("partition 1 has %d lookup keys of t2, want %d", got, inOne)
	}
	if d := cmp.Diff(want, threadSeqs(t, s.Reader, "t2")); d != "" {
		t.Errorf("Thread(t2) (-want +got):\n%s", d)
	}
}

// TestLookupKeysRolledBack: the keys of a batch that failed are not kept;
// its ops, retried one by one, are summarised once.
func TestLookupKeysRolledBack(t *testing.T) {
	s, _ := openTest(t, Options{BatchDelay: time.Hour, BatchRows: 1 << 20})
	var want []int64
	for i := range 1<<journalPartitionBits + 50 {
		seq, err := s.AppendSeq(testEntry(i, "a"))
		must(t, err)
		want = append(want, seq)
	}
	// A mark of a seq never journaled fails the batch; it is retried op by op.
	must(t, s.MarkDelivered(want[len(want)-1]+999))
	if err := s.Flush(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Flush = %v, want ErrNotFound", err)
	}
	if st := s.Stats(); st.Rollbacks == 0 {
		t.Fatal("the batch did not fail")
	}
	if d := cmp.Diff(want, threadSeqs(t, s.Reader, "a")); d != "" {
		t.Errorf("Thread(a) (-want +got):\n%s", d)
	}
	k := lookupKey(keyThread, "a")
	if got := keySeqs(0, keyBlob(t, s, 0, k), k); len(got) != 1<<journalPartitionBits-1 {
		t.Errorf("partition 0 has %d keys of thread a, want %d (one per row, none twice)", len(got), 1<<journalPartitionBits-1)
	}
}

// TestSweepDropsLookupKeys: once retention empties the oldest partitions,
// their lookup keys go too.
func TestSweepDropsLookupKeys(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	appendThreads(t, s, 2<<journalPartitionBits+10, 3)
	if got := keyParts(t, s); len(got) != 2 {
		t.Fatalf("partitions with lookup keys = %v", got)
	}
	clock.Advance(48 * time.Hour)
	fresh, err := s.AppendSeq(testEntry(0, "fresh"))
	must(t, err)
	flush(t, s)
	n, err := s.Sweep(context.Background(), func(_, _ string) Retention { return Retention{Policy: RetainDays, Days: 1} })
	must(t, err)
	if n != 2<<journalPartitionBits+10 {
		t.Fatalf("Sweep deleted %d entries", n)
	}
	if got := keyParts(t, s); len(got) != 0 {
		t.Errorf("partitions with lookup keys after the sweep = %v, want none", got)
	}
	if d := cmp.Diff([]int64{fresh}, threadSeqs(t, s.Reader, "fresh")); d != "" {
		t.Errorf("Thread(fresh) (-want +got):\n%s", d)
	}
}

// TestVerifyLookupKeys: Verify passes a journal with a summarised partition
// and reports the row whose thread key was removed from the lookup keys.
func TestVerifyLookupKeys(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir, Options{})
	want := appendThreads(t, s, 1<<journalPartitionBits+10, 9)
	rep, err := s.Verify(context.Background(), nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("clean journal: %v", rep.Faults)
	}
	victim := want["t4"][3]
	k := lookupKey(keyThread, "t4")
	blob := keyBlob(t, s, 0, k)
	must(t, s.Close())
	var kept []byte
	for i := 0; i < len(blob); i += keyRecordSize {
		if r := binary.BigEndian.Uint64(blob[i:]); r != keyRecord(k, victim) {
			kept = binary.BigEndian.AppendUint64(kept, r)
		}
	}
	db := rawDB(t, dir)
	_, err = db.Exec(`UPDATE journal_keys SET keys = ? WHERE part = 0 AND bucket = ?`, kept, keyBucket(k))
	must(t, err)
	must(t, db.Close())
	r, err := OpenReadOnly(dir)
	must(t, err)
	defer r.Close()
	rep, err = r.Verify(context.Background(), nil)
	must(t, err)
	if len(rep.Faults) != 1 || rep.Faults[0].Kind != FaultLookupKey || rep.Faults[0].Seq != victim {
		t.Fatalf("faults = %v, want one lookup-key fault at seq %d", rep.Faults, victim)
	}
}
