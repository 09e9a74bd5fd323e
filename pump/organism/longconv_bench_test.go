package organism_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// storeCounts are the rows and bytes a durable organism keeps.
type storeCounts struct {
	journalRows, journalBytes, slotRows, slotBytes, threads, calls, statements float64
}

// countStore reads o's store totals.
func countStore(b *testing.B, o *organism.Organism) storeCounts {
	b.Helper()
	if err := o.Store().Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	db := o.Store().ReadDB()
	c := storeCounts{statements: float64(o.Store().Statements())}
	for _, q := range []struct {
		sql string
		v   *float64
	}{
		{"SELECT count(*) FROM journal_rows", &c.journalRows},
		{"SELECT coalesce(sum(length(envelope)), 0) FROM journal_rows", &c.journalBytes},
		{"SELECT count(*) FROM slots", &c.slotRows},
		{"SELECT coalesce(sum(length(raw)), 0) FROM slots", &c.slotBytes},
		{"SELECT count(*) FROM threads", &c.threads},
		{"SELECT count(*) FROM llm_calls", &c.calls},
	} {
		if err := db.QueryRow(q.sql).Scan(q.v); err != nil {
			b.Fatalf("%s: %v", q.sql, err)
		}
	}
	return c
}

// BenchmarkLongConversation measures one turn (the caller's Continue to the
// agent's answer, through the pump, the durable store and a loopback
// model over HTTP) of a conversation already depth turns long (every
// fifth turn calls a tool), and what each turn adds to the store: journal
// rows and envelope bytes, history slots and bytes, threads, model calls.
// Run with a fixed -benchtime (e.g. 50x) so depth barely moves. default:
// the model's own window (32768 tokens: the whole conversation is sent up
// to depth 1000); window: a window of 2048 tokens; librarian: the same,
// curated.
func BenchmarkLongConversation(b *testing.B) {
	for _, mode := range []struct{ name, extra string }{
		{"default", ""},
		{"window", "    context_window: 2048\n"},
		{"librarian", "    context_window: 2048\n    librarian: {}\n"},
	} {
		for _, depth := range []int{10, 300, 1000} {
			b.Run(fmt.Sprintf("%s/depth=%d", mode.name, depth), func(b *testing.B) {
				benchLongConversation(b, depth, mode.extra)
			})
		}
	}
}

func benchLongConversation(b *testing.B, depth int, extra string) {
	{
		{
			m := newLongModel(b, longReply)
			o := startLongConv(b, m.URL, b.TempDir(), extra)
			defer func() { _ = o.Shutdown(context.Background()) }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			conv := ""
			turn := func(k int) {
				ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
				if err != nil {
					b.Fatalf("turn %d: %v", k, err)
				}
				conv = ev.Conversation
			}
			for k := 1; k <= depth; k++ {
				turn(k)
			}
			before := countStore(b, o)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				turn(depth + 1 + i)
			}
			b.StopTimer()
			after := countStore(b, o)
			n := float64(b.N)
			b.ReportMetric((after.journalRows-before.journalRows)/n, "journal-rows/turn")
			b.ReportMetric((after.journalBytes-before.journalBytes)/n, "journal-B/turn")
			b.ReportMetric((after.slotRows-before.slotRows)/n, "slots/turn")
			b.ReportMetric((after.slotBytes-before.slotBytes)/n, "slot-B/turn")
			b.ReportMetric((after.threads-before.threads)/n, "threads/turn")
			b.ReportMetric((after.calls-before.calls)/n, "model-calls/turn")
			b.ReportMetric((after.statements-before.statements)/n, "statements/turn")
		}
	}
}
