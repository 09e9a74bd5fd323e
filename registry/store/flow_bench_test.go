package store

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// processCPU returns the CPU time (user + system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJournalFlow replays the store traffic of `xmlpipe bench
// --journal`: every envelope is one append with a fresh random thread and
// conversation and ~600 bytes of canonical XML, and one delivery mark once
// it was handled. It reports the process CPU time and the SQL statements
// per envelope, which is what journaling costs the pump; the sub-benchmarks
// vary the batch size. Like the pump, it hands the store a fresh envelope
// slice per append (Append takes ownership of it).
func BenchmarkJournalFlow(b *testing.B) {
	for _, bc := range []struct {
		name string
		rows int
	}{{"default", 0}, {"batch=160", 160}} {
		b.Run(bc.name, func(b *testing.B) { journalFlow(b, Options{BatchRows: bc.rows}) })
	}
}

func journalFlow(b *testing.B, opts Options) {
	s, _ := openTest(b, opts)
	flowLoop(b, s)
}

// flowLoop runs the benchmark's appends and marks against s.
func flowLoop(b *testing.B, s *Store) {
	body := bytes.Repeat([]byte("x"), 520)
	e := Entry{Direction: Inbound, Kind: Message, From: "bench", To: "shouter", Listener: "shouter",
		PayloadTag: "GreetingResponse"}
	var prev int64
	b.ReportAllocs()
	stmts0, cpu0 := s.Statements(), processCPU()
	for b.Loop() {
		e.Thread, e.Conversation = uuid.NewString(), uuid.NewString()
		e.Bytes = append(append(append(make([]byte, 0, len(body)+64), `<message><thread>`...), e.Thread...), body...)
		seq, err := s.AppendSeq(e)
		if err != nil {
			b.Fatal(err)
		}
		if prev > 0 {
			if err := s.MarkDelivered(prev); err != nil {
				b.Fatal(err)
			}
		}
		prev = seq
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/n, "cpu-µs/envelope")
	b.ReportMetric(float64(s.Statements()-stmts0)/n, "statements/envelope")
}
