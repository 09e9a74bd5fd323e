package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJournalLookupAcrossPartitions: Thread and Conversation find rows in
// every partition, in seq order, through the partitioned indexes.
func TestJournalLookupAcrossPartitions(t *testing.T) {
	s, _ := openTest(t, Options{})
	const rows = 3 << journalPartitionBits // three partitions and a bit
	var wantThread, wantConv []int64
	for i := range rows + 7 {
		thread, conv := fmt.Sprintf("t%d", i%97), fmt.Sprintf("c%d", i%89)
		if i%1000 == 3 {
			thread, conv = "needle", "haystack"
		}
		e := testEntry(i, thread)
		e.Conversation = conv
		seq, err := s.AppendSeq(e)
		must(t, err)
		if thread == "needle" {
			wantThread = append(wantThread, seq)
			wantConv = append(wantConv, seq)
		}
	}
	flush(t, s)
	if len(wantThread) < 4 {
		t.Fatalf("fixture spans too few partitions: %v", wantThread)
	}
	seqs := func(es []Entry, err error) []int64 {
		t.Helper()
		must(t, err)
		var out []int64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	if d := cmp.Diff(wantThread, seqs(s.Thread("needle"))); d != "" {
		t.Errorf("Thread (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantConv, seqs(s.Conversation("haystack"))); d != "" {
		t.Errorf("Conversation (-want +got):\n%s", d)
	}
	if got := seqs(s.Thread("absent")); len(got) != 0 {
		t.Errorf("Thread(absent) = %v", got)
	}
}

// TestPartitionedLookupsMigration: a version-2 database with journal rows
// is migrated to the partitioned indexes and its rows are found by thread
// and conversation.
func TestPartitionedLookupsMigration(t *testing.T) {
	dir := t.TempDir()
	db := rawDB(t, dir)
	ctx := context.Background()
	if _, err := migrate(ctx, db, migrations[:2], func() int64 { return 1 }); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3000; seq += 999 {
		_, err := db.ExecContext(ctx, `INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind,
			from_name, sha256, bytes) VALUES (?, 1, 't', 'c', 'inbound', 'message', 'a', zeroblob(32), 'x')`, seq)
		must(t, err)
	}
	must(t, db.Close())
	s := openAt(t, dir, Options{})
	for _, tt := range []struct {
		name   string
		lookup func(string) ([]Entry, error)
		id     string
	}{{"Thread", s.Thread, "t"}, {"Conversation", s.Conversation, "c"}} {
		es, err := tt.lookup(tt.id)
		must(t, err)
		var got []int64
		for _, e := range es {
			got = append(got, e.Seq)
		}
		if d := cmp.Diff([]int64{1, 1000, 1999, 2998}, got); d != "" {
			t.Errorf("%s after migration (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestJournalLookupEmpty: a lookup in an empty journal finds nothing.
func TestJournalLookupEmpty(t *testing.T) {
	s, _ := openTest(t, Options{})
	got, err := s.Thread("t")
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("Thread in an empty journal = %v", got)
	}
}

// TestJournalLookupPlan: SQLite answers the key probe by searching
// journal_keys's primary key, once per partition, never by scanning.
func TestJournalLookupPlan(t *testing.T) {
	s, _ := openTest(t, Options{})
	rows, err := s.rdb.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+keyProbe, 1)
	must(t, err)
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		must(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	must(t, rows.Err())
	must(t, rows.Close())
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "SEARCH journal_keys USING PRIMARY KEY (part=? AND bucket=?)") ||
		strings.Contains(text, "SCAN journal_keys") {
		t.Errorf("plan does not probe journal_keys by its key:\n%s", text)
	}
}

// BenchmarkThreadLookup measures Thread in a journal of 64 partitions
// (65536 rows); the cost grows with the number of partitions.
func BenchmarkThreadLookup(b *testing.B) {
	s, _ := openTest(b, Options{})
	const rows = 64 << journalPartitionBits
	for i := range rows {
		must(b, s.Append(testEntry(i, fmt.Sprintf("t%d", i))))
	}
	flush(b, s)
	b.ResetTimer()
	for b.Loop() {
		es, err := s.Thread("t4242")
		if err != nil || len(es) != 1 {
			b.Fatalf("Thread = %d entries, %v", len(es), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/(rows>>journalPartitionBits), "µs/partition")
}
