package store

import (
	"context"
	"fmt"
	"strings"
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
// conversation and the ~410 bytes of canonical XML the bench sends
// (alternately the greeting to shouter and the shout to sink), and one
// delivery mark once it was handled. It reports the process CPU time and the SQL statements
// per envelope, which is what journaling costs the pump; the sub-benchmarks
// vary the batch size. Like the pump, it hands the store a fresh envelope
// slice per append (Append takes ownership of it).
//
// The "lagging" sub-benchmark marks like the two-hop flow under load: every
// other envelope (the first hop's) is marked 300 appends after it was
// journaled, the others (the second hop's, queued behind more work) 2000
// appends after, so each commit finds delivered entries interleaved with
// undelivered ones above the watermark. The "paced" ones mark the same way
// but append at the rate of the pump bench (flowPace), so that batches end
// with the batch delay: "paced" lingers over them (Options.BatchLinger),
// "paced-nolinger" commits when the delay ends.
func BenchmarkJournalFlow(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
		lags [2]int
		pace int
	}{
		{"default", Options{}, [2]int{1, 1}, 0},
		{"batch=160", Options{BatchRows: 160}, [2]int{1, 1}, 0},
		{"lagging", Options{}, [2]int{300, 2000}, 0},
		{"paced", Options{}, [2]int{300, 2000}, flowPace},
		{"paced-nolinger", Options{BatchLinger: DefaultBatchDelay}, [2]int{300, 2000}, flowPace},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := openTest(b, bc.opts)
			flowLoop(b, s, bc.lags, bc.pace)
		})
	}
}

// flowPace is the appends per millisecond of the "paced" sub-benchmarks:
// about the rate of `xmlpipe bench --journal` on 2 shared cores, at which
// the writer's batches end with the batch delay (or the linger), not full.
const flowPace = 17

// flowLoop runs the benchmark's appends and marks against s: the envelope
// appended i-th is marked after lags[i%2] more appends. With pace > 0 it
// appends pace envelopes per millisecond, sleeping between.
func flowLoop(b *testing.B, s *Store, lags [2]int, pace int) {
	const greeting = "Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you!"
	hops := [2]Entry{
		{Direction: Inbound, Kind: Message, From: "bench", To: "shouter", Listener: "shouter", PayloadTag: "GreetingResponse"},
		{Direction: Outbound, Kind: Message, From: "shouter", To: "sink", Listener: "sink", PayloadTag: "ShoutedResponse"},
	}
	payloads := [2]string{`<GreetingResponse xmlns=""><Message>%d ` + greeting + `</Message><OriginalSender>sink</OriginalSender></GreetingResponse>`,
		`<ShoutedResponse xmlns=""><Message>%d ` + strings.ToUpper(greeting) + `</Message></ShoutedResponse>`}
	// due[k] holds the seqs to mark once k more appends are done.
	due := make([][]int64, max(lags[0], lags[1])+1)
	b.ReportAllocs()
	stmts0, cpu0, frames0, commits0 := s.Statements(), processCPU(), s.Stats().WALFrames, s.Stats().Commits
	i := 0
	next := time.Now()
	for b.Loop() {
		if pace > 0 && i%pace == 0 {
			next = next.Add(time.Millisecond)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
		}
		e := hops[i%2]
		e.Thread, e.Conversation = uuid.NewString(), uuid.NewString()
		e.Bytes = fmt.Appendf(make([]byte, 0, 512), `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>%s</from><to>%s</to><thread>%s</thread></meta>`+payloads[i%2]+`</message>`,
			e.From, e.To, e.Thread, i)
		seq, err := s.AppendSeq(e)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range due[0] {
			if err := s.MarkDelivered(m); err != nil {
				b.Fatal(err)
			}
		}
		due = append(due[1:], due[0][:0])
		lag := lags[i%2]
		due[lag-1] = append(due[lag-1], seq)
		i++
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/n, "cpu-µs/envelope")
	b.ReportMetric(float64(s.Statements()-stmts0)/n, "statements/envelope")
	b.ReportMetric(float64(s.Stats().WALFrames-frames0)*1000/n, "WAL-pages/1k-envelopes")
	b.ReportMetric(float64(s.Stats().Commits-commits0)*1000/n, "commits/1k-envelopes")
}
