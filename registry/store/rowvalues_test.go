package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"
)

// TestJournalRowValues: the writer binds a row's values as views of the
// entry (rowvalues.go), its names as journal_names ids (the empty profile
// as the empty name's), the empty diagnostics as NULL that the INSERT
// stores as the empty string. Every column reads back as appended,
// in multi-row statements of several sizes and with empty and non-empty
// optional columns, and no empty column is stored as NULL.
func TestJournalRowValues(t *testing.T) {
	for _, n := range []int{1, 3, 64, 130} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, dir := openTest(t, Options{BatchDelay: time.Hour, BatchRows: 1000})
			at := time.Date(2026, 11, 27, 3, 4, 5, 123456789, time.UTC)
			var want []Entry
			for i := range n {
				e := Entry{Time: at.Add(time.Duration(i) * time.Second), Thread: fmt.Sprintf("th-%d", i),
					Direction: []Direction{Inbound, Outbound}[i%2], Kind: Message, From: "greeter", Listener: "shouter",
					PayloadTag: "Greeting", Bytes: fmt.Appendf(nil, "<Greeting>%d</Greeting>", i)}
				if i%2 == 0 {
					e.Conversation, e.To, e.Diagnostics, e.Profile = "conv", "shouter", "repaired: x", "admin&ops"
				}
				want = append(want, e)
			}
			first, err := s.AppendGroup(want)
			must(t, err)
			must(t, s.Flush(context.Background()))
			rows, err := rawDB(t, dir).Query(`SELECT seq, time_ns, thread, conversation, direction, kind, sender,
				recipient, listener, root, sha256, envelope, diagnostics, profile, typeof(diagnostics), typeof(profile),
				typeof(envelope) FROM journal_entries ORDER BY seq`)
			must(t, err)
			defer rows.Close()
			i := 0
			for ; rows.Next(); i++ {
				var seq, ns int64
				var thread, conv, dir, kind, from, to, listener, root, env, diags, profile, td, tp, te string
				var sum []byte
				must(t, rows.Scan(&seq, &ns, &thread, &conv, &dir, &kind, &from, &to, &listener, &root, &sum, &env,
					&diags, &profile, &td, &tp, &te))
				w := want[i]
				digest := sha256.Sum256(w.Bytes)
				got := fmt.Sprintf("%#v", []any{seq, ns, thread, conv, dir, kind, from, to, listener, root, string(sum), env,
					diags, profile, td, tp, te})
				wantRow := fmt.Sprintf("%#v", []any{first + int64(i), w.Time.UnixNano(), w.Thread, w.Conversation,
					w.Direction.String(), w.Kind.String(), w.From, w.To, w.Listener, w.PayloadTag, string(digest[:]),
					string(w.Bytes), w.Diagnostics, w.Profile, "text", "text", "text"})
				if got != wantRow {
					t.Errorf("row %d\n got %q\nwant %q", i, got, wantRow)
				}
			}
			must(t, rows.Err())
			if i != n {
				t.Errorf("%d rows, want %d", i, n)
			}
		})
	}
}
