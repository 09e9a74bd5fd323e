package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAppendValidation(t *testing.T) {
	s, _ := openTest(t, Options{})
	valid := testEntry(1, "t")
	tests := []struct {
		name   string
		mutate func(*Entry)
		ok     bool
	}{
		{"valid", func(*Entry) {}, true},
		{"no direction", func(e *Entry) { e.Direction = 0 }, false},
		{"bad direction", func(e *Entry) { e.Direction = 9 }, false},
		{"no kind", func(e *Entry) { e.Kind = 0 }, false},
		{"no thread", func(e *Entry) { e.Thread = "" }, false},
		{"no from", func(e *Entry) { e.From = "" }, false},
		{"no bytes", func(e *Entry) { e.Bytes = nil }, false},
		{"dead letter without thread and from", func(e *Entry) { e.Kind, e.Thread, e.From = DeadLetter, "", "" }, true},
		{"dead letter without bytes", func(e *Entry) { e.Kind, e.Bytes = DeadLetter, nil }, false},
		{"time out of range", func(e *Entry) { e.Time = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := valid
			tt.mutate(&e)
			err := s.Append(e)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("Append = %v, want ok=%v", err, tt.ok)
			}
			_, err = s.AppendSync(context.Background(), e)
			if (err == nil) != tt.ok {
				t.Fatalf("AppendSync = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	flush(t, s)
}

// TestAppendFillsTimeAndHash: Append stamps the clock's time, computes the
// hash and keeps a caller-supplied time.
func TestAppendFillsTimeAndHash(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	e := testEntry(1, "t")
	orig := string(e.Bytes)
	must(t, s.Append(e))
	given := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	e2 := testEntry(2, "t")
	e2.Time = given
	seq, err := s.AppendSync(context.Background(), e2)
	must(t, err)
	if seq != 2 {
		t.Fatalf("AppendSync seq = %d, want 2", seq)
	}
	got, err := s.Thread("t")
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("got %d entries", len(got))
	}
	if string(got[0].Bytes) != orig {
		t.Errorf("stored bytes = %q, want %q", got[0].Bytes, orig)
	}
	if got[0].SHA256 != sha256.Sum256([]byte(orig)) {
		t.Error("SHA256 not computed")
	}
	if !got[0].Time.Equal(clock.Now()) || !got[1].Time.Equal(given) {
		t.Errorf("times = %v, %v; want %v, %v", got[0].Time, got[1].Time, clock.Now(), given)
	}
}

func TestJournalReads(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	// Two conversations: c1 with threads a, b; c2 with thread c.
	plan := []struct {
		thread, conv, from, to, tag string
		dir                         Direction
		kind                        Kind
	}{
		{"a", "c1", "console", "greeter", "Greeting", Inbound, Message},
		{"a", "c1", "greeter", "shouter", "GreetingResponse", Outbound, Message},
		{"c", "c2", "user", "calc", "Add", Inbound, Message},
		{"b", "c1", "greeter", "llm", "Ask", Outbound, Message},
		{"a", "c1", "shouter", "console", "huh", Outbound, Huh},
		{"c", "c2", "calc", "user", "SystemError", Outbound, SystemError},
	}
	var want []Entry
	for i, p := range plan {
		clock.Advance(time.Second)
		e := Entry{Thread: p.thread, Conversation: p.conv, Direction: p.dir, Kind: p.kind, From: p.from,
			To: p.to, Listener: p.to, PayloadTag: p.tag, Bytes: []byte{byte('0' + i)}, Diagnostics: "d"}
		seq, err := s.AppendSync(ctx, e)
		must(t, err)
		e.Seq, e.Time, e.SHA256 = seq, clock.Now(), sha256.Sum256(e.Bytes)
		want = append(want, e)
	}
	pick := func(idx ...int) []Entry {
		var out []Entry
		for _, i := range idx {
			out = append(out, want[i])
		}
		return out
	}
	reads := []struct {
		name string
		read func() ([]Entry, error)
		want []Entry
	}{
		{"Tail(2)", func() ([]Entry, error) { return s.Tail(2) }, pick(4, 5)},
		{"Tail(100)", func() ([]Entry, error) { return s.Tail(100) }, want},
		{"Tail(0)", func() ([]Entry, error) { return s.Tail(0) }, nil},
		{"After(2,2)", func() ([]Entry, error) { return s.After(2, 2) }, pick(2, 3)},
		{"After(0,0)", func() ([]Entry, error) { return s.After(0, 0) }, want},
		{"After(6,0)", func() ([]Entry, error) { return s.After(6, 0) }, nil},
		{"Thread(a)", func() ([]Entry, error) { return s.Thread("a") }, pick(0, 1, 4)},
		{"Thread(none)", func() ([]Entry, error) { return s.Thread("none") }, nil},
		{"Conversation(c1)", func() ([]Entry, error) { return s.Conversation("c1") }, pick(0, 1, 3, 4)},
		{"Conversation(c2)", func() ([]Entry, error) { return s.Conversation("c2") }, pick(2, 5)},
	}
	for _, r := range reads {
		got, err := r.read()
		must(t, err)
		if d := cmp.Diff(r.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", r.name, d)
		}
	}
	n, err := s.Count()
	must(t, err)
	last, err := s.LastSeq()
	must(t, err)
	if n != 6 || last != 6 {
		t.Errorf("Count, LastSeq = %d, %d; want 6, 6", n, last)
	}

	at := func(i int) time.Time { return want[i].Time }
	sumA := ThreadSummary{ID: "a", Conversation: "c1", First: at(0), Last: at(4), Messages: 3,
		LastFrom: "shouter", LastTo: "console", PayloadTags: []string{"Greeting", "GreetingResponse", "huh"},
		LastSeq: 5, Failures: 1}
	sumB := ThreadSummary{ID: "b", Conversation: "c1", First: at(3), Last: at(3), Messages: 1,
		LastFrom: "greeter", LastTo: "llm", PayloadTags: []string{"Ask"}, LastSeq: 4}
	sumC := ThreadSummary{ID: "c", Conversation: "c2", First: at(2), Last: at(5), Messages: 2,
		LastFrom: "calc", LastTo: "user", PayloadTags: []string{"Add", "SystemError"},
		LastSeq: 6, Failures: 1}
	summaries := []struct {
		name          string
		limit, offset int
		filter        ThreadFilter
		want          []ThreadSummary
	}{
		{"all", 0, 0, ThreadFilter{}, []ThreadSummary{sumC, sumA, sumB}},
		{"page 1", 2, 0, ThreadFilter{}, []ThreadSummary{sumC, sumA}},
		{"page 2", 2, 2, ThreadFilter{}, []ThreadSummary{sumB}},
		{"conversation", 0, 0, ThreadFilter{Conversation: "c1"}, []ThreadSummary{sumA, sumB}},
		{"participant", 0, 0, ThreadFilter{Participant: "greeter"}, []ThreadSummary{sumA, sumB}},
		{"payload tag", 0, 0, ThreadFilter{PayloadTag: "Add"}, []ThreadSummary{sumC}},
		{"since", 0, 0, ThreadFilter{Since: at(4)}, []ThreadSummary{sumC, sumA}},
		{"until", 0, 0, ThreadFilter{Until: at(2)}, []ThreadSummary{sumA}},
		{"no match", 0, 0, ThreadFilter{Participant: "nobody"}, nil},
		{"id prefix, any case", 0, 0, ThreadFilter{IDPrefix: "A"}, []ThreadSummary{sumA}},
	}
	for _, tt := range summaries {
		got, err := s.Threads(tt.limit, tt.offset, tt.filter)
		must(t, err)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Threads %s (-want +got):\n%s", tt.name, d)
		}
	}

	convC1 := ThreadSummary{ID: "c1", Conversation: "c1", First: at(0), Last: at(4), Messages: 4,
		LastFrom: "shouter", LastTo: "console", PayloadTags: []string{"Ask", "Greeting", "GreetingResponse", "huh"},
		LastSeq: 5, Failures: 1}
	convC2 := ThreadSummary{ID: "c2", Conversation: "c2", First: at(2), Last: at(5), Messages: 2,
		LastFrom: "calc", LastTo: "user", PayloadTags: []string{"Add", "SystemError"},
		LastSeq: 6, Failures: 1}
	convs := []struct {
		name          string
		limit, offset int
		filter        ThreadFilter
		want          []ThreadSummary
	}{
		{"all", 0, 0, ThreadFilter{}, []ThreadSummary{convC2, convC1}},
		{"page 2", 1, 1, ThreadFilter{}, []ThreadSummary{convC1}},
		{"id prefix", 0, 0, ThreadFilter{IDPrefix: "C1"}, []ThreadSummary{convC1}},
		{"participant", 0, 0, ThreadFilter{Participant: "llm"}, []ThreadSummary{convC1}},
		{"no match", 0, 0, ThreadFilter{IDPrefix: "x"}, nil},
	}
	for _, tt := range convs {
		got, err := s.Conversations(tt.limit, tt.offset, tt.filter)
		must(t, err)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Conversations %s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestDirectionKindNames(t *testing.T) {
	for _, d := range []Direction{Inbound, Outbound} {
		got, err := ParseDirection(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDirection(%q) = %v, %v", d, got, err)
		}
	}
	for _, k := range []Kind{Message, Huh, SystemError, DeadLetter, Refusal, Decision} {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseDirection("sideways"); !errors.Is(err, ErrInvalid) {
		t.Error("ParseDirection accepted an unknown name")
	}
	if _, err := ParseKind("gossip"); !errors.Is(err, ErrInvalid) {
		t.Error("ParseKind accepted an unknown name")
	}
	if Direction(0).String() != "Direction(0)" || Kind(9).String() != "Kind(9)" {
		t.Error("invalid values do not print as such")
	}
}

func TestMarkDelivered(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	seq, err := s.AppendSync(ctx, testEntry(1, "t"))
	must(t, err)
	must(t, s.MarkDelivered(seq))
	must(t, s.MarkDelivered(seq)) // idempotent
	flush(t, s)
	if got := deliveredSeqs(t, s); len(got) != 1 || got[0] != seq {
		t.Fatalf("delivered = %v, want [%d]", got, seq)
	}
	if err := s.MarkDelivered(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("MarkDelivered(0) = %v, want ErrInvalid", err)
	}
	must(t, s.MarkDelivered(42))
	if err := s.Flush(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Flush after marking an unknown seq = %v, want ErrNotFound", err)
	}
	got, err := s.Thread("t")
	must(t, err)
	if len(got) != 1 {
		t.Fatal("entry lost")
	}
}

// TestJournalAppendOnlyEnforced: the database refuses to change a journal
// row or a tombstone, and to delete a row before a tombstone records its
// seq.
func TestJournalAppendOnlyEnforced(t *testing.T) {
	s, _ := openTest(t, Options{BatchRows: 100, BatchDelay: time.Hour})
	for i := range 3 {
		must(t, s.Append(testEntry(i, "t")))
	}
	flush(t, s)
	tamper := func(q string) error {
		_, err := s.do(context.Background(), "tamper", func(w *writer) (int64, error) { return w.exec(q) })
		return err
	}
	for _, q := range []string{
		`UPDATE journal_rows SET envelope = '<x/>' WHERE seq = 1`,
		`UPDATE journal_rows SET seq = 9 WHERE seq = 1`,
		`DELETE FROM journal_rows WHERE seq = 1`, // no tombstone
	} {
		if err := tamper(q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	must(t, tamper(`INSERT INTO journal_tombstones (seq, deleted_at, reason) VALUES (1, 1, 'test')`))
	must(t, tamper(`DELETE FROM journal_rows WHERE seq = 1`))
	for _, q := range []string{`UPDATE journal_tombstones SET reason = 'x'`, `DELETE FROM journal_tombstones`} {
		if err := tamper(q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	if n, err := s.Count(); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
}

// TestJournalReadsAsSQL: the journal view reads with plain SQL, as sqlite3
// would: one row per envelope, the time as ISO-8601 text, the envelope and
// its payload element as text, the sender, recipient, listener and root
// tag in their columns; dead-letter bytes that are not UTF-8 come back
// unchanged.
func TestJournalReadsAsSQL(t *testing.T) {
	clock := newFakeClock()
	s, dir := openTest(t, Options{Clock: clock.Now})
	ctx := context.Background()
	e := testEntry(1, "th-1")
	_, err := s.AppendSync(ctx, e)
	must(t, err)
	dead := Entry{Direction: Inbound, Kind: DeadLetter, Bytes: []byte{'<', 0xff, 0, 'x', '>'}}
	deadSeq, err := s.AppendSync(ctx, dead)
	must(t, err)
	var seq int64
	var at, sender, recipient, listener, root, payload, envelope, typ string
	must(t, rawDB(t, dir).QueryRow(`SELECT seq, time, sender, recipient, listener, root, payload, envelope,
		typeof(envelope) FROM journal WHERE thread = 'th-1'`).
		Scan(&seq, &at, &sender, &recipient, &listener, &root, &payload, &envelope, &typ))
	want := fmt.Sprintf("1 %s greeter shouter shouter Greeting <Greeting><Name>n1</Name></Greeting> %s text",
		clock.Now().Format("2006-01-02T15:04:05.000000000Z"), e.Bytes)
	if got := fmt.Sprint(seq, " ", at, " ", sender, " ", recipient, " ", listener, " ", root, " ", payload, " ", envelope,
		" ", typ); got != want {
		t.Errorf("SQL read\n got %s\nwant %s", got, want)
	}
	es, err := s.After(deadSeq-1, 0)
	must(t, err)
	if len(es) != 1 || !bytes.Equal(es[0].Bytes, dead.Bytes) || es[0].SHA256 != sha256.Sum256(dead.Bytes) {
		t.Errorf("dead letter read back as %+v", es)
	}
}

// TestJournalStoresNames: journal_rows stores the names of every direction
// and kind (the writer binds them as numbers that the INSERT names,
// journal_write.go).
func TestJournalStoresNames(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	var want []string
	for _, d := range []Direction{Inbound, Outbound} {
		for _, k := range []Kind{Message, Huh, SystemError, DeadLetter, Refusal, Decision} {
			e := testEntry(len(want), "names")
			e.Direction, e.Kind = d, k
			_, err := s.AppendSync(ctx, e)
			must(t, err)
			want = append(want, d.String()+" "+k.String())
		}
	}
	var got []string
	must(t, s.read(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT direction || ' ' || kind FROM journal ORDER BY seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			got = append(got, "")
			if err := rows.Scan(&got[len(got)-1]); err != nil {
				return err
			}
		}
		return rows.Err()
	}))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stored direction and kind (-want +got):\n%s", d)
	}
}
