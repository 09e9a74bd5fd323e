package store

import (
	"context"
	"testing"
)

// BenchmarkMarkDelivered measures what a delivery mark costs the process
// (the marking goroutine and the writer together): b.N entries are
// journaled and committed first, then marked one by one in journal order,
// and the process CPU time from the first mark to the commit of the last
// is reported per mark.
func BenchmarkMarkDelivered(b *testing.B) {
	s, _ := openTest(b, Options{})
	seqs := make([]int64, 0, b.N)
	for i := range b.N {
		seq, err := s.AppendSeq(testEntry(i, "t"))
		if err != nil {
			b.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	stmts0, cpu0 := s.Statements(), processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.MarkDelivered(seqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/n, "cpu-ns/mark")
	b.ReportMetric(float64(s.Statements()-stmts0)/n, "statements/mark")
}
