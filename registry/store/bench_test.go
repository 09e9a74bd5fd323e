package store

import (
	"context"
	"testing"
)

// BenchmarkAppend measures batched asynchronous appends, flushed at the end.
func BenchmarkAppend(b *testing.B) {
	s, _ := openTest(b, Options{})
	e := testEntry(1, "bench-thread")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	st := s.Stats()
	b.ReportMetric(float64(st.Committed)/float64(max(st.Commits, 1)), "rows/commit")
}

// BenchmarkAppendSync measures one caller waiting for each commit.
func BenchmarkAppendSync(b *testing.B) {
	s, _ := openTest(b, Options{})
	e := testEntry(1, "bench-thread")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.AppendSync(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAppendSyncParallel measures many callers sharing group commits.
func BenchmarkAppendSyncParallel(b *testing.B) {
	s, _ := openTest(b, Options{})
	e := testEntry(1, "bench-thread")
	ctx := context.Background()
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.AppendSync(ctx, e); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	st := s.Stats()
	b.ReportMetric(float64(st.Committed)/float64(max(st.Commits, 1)), "rows/commit")
}
