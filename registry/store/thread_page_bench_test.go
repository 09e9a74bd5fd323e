package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkThreadSummaries measures the page every open dashboard polls
// once a second (GET /api/v1/threads: the newest 30 threads, and the
// newest 30 conversations) over journals of 10,000 and 100,000 entries of
// five entries a thread, two threads a conversation. A page should cost
// about the same whatever the journal's length.
func BenchmarkThreadSummaries(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s, _ := openTest(b, Options{})
			fillThreadJournal(b, s, n)
			b.Run("threads", func(b *testing.B) {
				for b.Loop() {
					if ts, err := s.Threads(30, 0, ThreadFilter{}); err != nil || len(ts) != 30 {
						b.Fatal(len(ts), err)
					}
				}
			})
			b.Run("conversations", func(b *testing.B) {
				for b.Loop() {
					if ts, err := s.Conversations(30, 0, ThreadFilter{}); err != nil || len(ts) != 30 {
						b.Fatal(len(ts), err)
					}
				}
			})
		})
	}
}

// fillThreadJournal appends n entries of five a thread and two threads a
// conversation, the threads' entries interleaved with their neighbours'.
func fillThreadJournal(tb testing.TB, s *Store, n int) {
	tb.Helper()
	for i := range n {
		t := i/5 + i%2 // every other entry belongs to the next thread
		e := testEntry(i, fmt.Sprintf("thread-%d", t))
		e.Conversation = fmt.Sprintf("conv-%d", t/2)
		e.From, e.To = fmt.Sprintf("agent-%d", i%4), fmt.Sprintf("agent-%d", (i+1)%4)
		e.PayloadTag = []string{"Greeting", "Shouted", "ToolCall"}[i%3]
		if err := s.Append(e); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		tb.Fatal(err)
	}
}
