package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkJournalReads measures the readers over a journal of 20,000
// entries of 500 threads, four senders and listeners and three root tags:
// a page of After, a thread by its lookup keys and the thread summaries
// (Threads, filtered by a participant), which read every row.
func BenchmarkJournalReads(b *testing.B) {
	s, _ := openTest(b, Options{})
	const n = 20000
	for i := range n {
		e := testEntry(i, fmt.Sprintf("thread-%d", i%500))
		e.From, e.Listener = fmt.Sprintf("agent-%d", i%4), fmt.Sprintf("agent-%d", (i+1)%4)
		e.PayloadTag = []string{"Greeting", "Shouted", "ToolCall"}[i%3]
		if err := s.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("after", func(b *testing.B) {
		for b.Loop() {
			if es, err := s.After(n/2, 100); err != nil || len(es) != 100 {
				b.Fatal(len(es), err)
			}
		}
	})
	b.Run("thread", func(b *testing.B) {
		for b.Loop() {
			if es, err := s.Thread("thread-7"); err != nil || len(es) != n/500 {
				b.Fatal(len(es), err)
			}
		}
	})
	b.Run("threads", func(b *testing.B) {
		for b.Loop() {
			if ts, err := s.Threads(20, 0, ThreadFilter{Participant: "agent-2"}); err != nil || len(ts) != 20 {
				b.Fatal(len(ts), err)
			}
		}
	})
}
