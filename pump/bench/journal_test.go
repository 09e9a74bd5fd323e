package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// countingJournal forwards to a store journal and counts what the pump
// handed it.
type countingJournal struct {
	to                 pump.Journal
	records, delivered atomic.Int64
}

func (c *countingJournal) Record(r pump.Record) { c.records.Add(1); c.to.Record(r) }

func (c *countingJournal) RecordSeq(r pump.Record) int64 {
	c.records.Add(1)
	return c.to.(pump.SeqJournal).RecordSeq(r)
}

func (c *countingJournal) Delivered(seq int64) {
	c.delivered.Add(1)
	c.to.(pump.DeliveryJournal).Delivered(seq)
}

// TestRunJournalsEveryEnvelope: with a store journal and the kernel
// registries persisted (a durable organism's setup), every record the pump
// hands the journal is committed, every delivery mark lands (nothing is
// sampled or dropped), and the persisted kernel state equals the live
// registries once the run drained.
func TestRunJournalsEveryEnvelope(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := &countingJournal{to: organism.StoreJournal(st, nil)}
	cfg := Config{Duration: 200 * time.Millisecond, Injectors: 2, Journal: j}
	threadSink, todoSink, slotSink := organism.StateSinks(st, nil)
	cfg.Threads = registry.NewThreads(registry.ThreadsConfig{Organism: "bench", Sink: threadSink})
	cfg.Todos = registry.NewTodoRegistry(registry.TodoConfig{Lineage: cfg.Threads, Sink: todoSink})
	if cfg.Context, err = registry.NewContextBuffer(registry.ContextConfig{Sink: slotSink}); err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows := checkCommitted(t, st, j); rows < r.Envelopes {
		t.Errorf("journal rows = %d, envelopes measured = %d", rows, r.Envelopes)
	}
	checkPersisted(t, st, cfg)
}

// checkCommitted flushes st and checks that every record j saw is a
// journal row and every row is marked delivered; it returns the rows.
func checkCommitted(t *testing.T, st *store.Store, j *countingJournal) int64 {
	t.Helper()
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Count()
	if err != nil {
		t.Fatal(err)
	}
	undelivered, err := st.Undelivered()
	if err != nil {
		t.Fatal(err)
	}
	if n := j.records.Load(); rows != n || n == 0 {
		t.Errorf("journal rows = %d, records = %d", rows, n)
	}
	if d := j.delivered.Load(); d != rows || len(undelivered) != 0 {
		t.Errorf("delivery marks = %d for %d rows; %d undelivered", d, rows, len(undelivered))
	}
	return rows
}

// checkPersisted compares the kernel state in st with the live registries
// of cfg once the run drained: the same threads and context slots.
func checkPersisted(t *testing.T, st *store.Store, cfg Config) {
	t.Helper()
	rows, err := st.LoadThreads()
	if err != nil {
		t.Fatal(err)
	}
	var stored, live []string
	for _, r := range rows {
		stored = append(stored, r.ID+" "+strings.Join(r.Path, "/"))
	}
	for _, r := range cfg.Threads.Records() {
		live = append(live, r.ID+" "+strings.Join(r.Path, "/"))
	}
	slices.Sort(stored)
	slices.Sort(live)
	if d := cmp.Diff(live, stored); d != "" {
		t.Errorf("persisted threads differ from the live registry (-live +stored):\n%s", d)
	}
	slots, err := st.LoadSlots()
	if err != nil {
		t.Fatal(err)
	}
	if cs := cfg.Context.Stats(); len(slots) != cs.TotalSlots {
		t.Errorf("persisted slots = %d, live = %d", len(slots), cs.TotalSlots)
	}
}

// TestRunJournalAB: the interleaved A/B run reports both throughputs, and
// every record the journal saw is committed and marked delivered (the marks
// of messages journaled before the gate closed still land).
func TestRunJournalAB(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := &countingJournal{to: organism.StoreJournal(st, nil)}
	r, err := Run(context.Background(), Config{Duration: 400 * time.Millisecond, Injectors: 2, Journal: j,
		JournalAB: true, Flush: st.Flush})
	if err != nil {
		t.Fatal(err)
	}
	if r.JournalOffPerSec <= 0 || r.JournalOnPerSec <= 0 || r.JournalRatio <= 0 || r.JournalOnCPUUs <= 0 {
		t.Fatalf("A/B figures missing: %+v", r)
	}
	checkCommitted(t, st, j)
}

// TestJournalGate: while off, the gate journals nothing and assigns no seq;
// delivery marks pass either way.
func TestJournalGate(t *testing.T) {
	var got []string
	to := seqJournalFunc{
		record:    func(r pump.Record) int64 { got = append(got, "record "+r.Thread); return 7 },
		delivered: func(seq int64) { got = append(got, fmt.Sprint("delivered ", seq)) },
	}
	g := &journalGate{to: to}
	if seq := g.RecordSeq(pump.Record{Thread: "a"}); seq != 0 {
		t.Errorf("closed gate assigned seq %d", seq)
	}
	g.Record(pump.Record{Thread: "b"})
	g.Delivered(3)
	g.on.Store(true)
	if seq := g.RecordSeq(pump.Record{Thread: "c"}); seq != 7 {
		t.Errorf("open gate: seq %d, want 7", seq)
	}
	g.Delivered(7)
	if d := cmp.Diff([]string{"delivered 3", "record c", "delivered 7"}, got); d != "" {
		t.Errorf("forwarded (-want +got):\n%s", d)
	}
}

// seqJournalFunc is a SeqJournal and DeliveryJournal made of functions.
type seqJournalFunc struct {
	record    func(pump.Record) int64
	delivered func(int64)
}

func (f seqJournalFunc) Record(r pump.Record)          { f.record(r) }
func (f seqJournalFunc) RecordSeq(r pump.Record) int64 { return f.record(r) }
func (f seqJournalFunc) Delivered(seq int64)           { f.delivered(seq) }

// TestJournalABCountsFlushInOnSlice: an on slice that an off slice follows,
// and the last slice, end with a flush made with the gate closed, and what
// the flush took (here: envelopes sunk while it ran) counts against that on
// slice, never against an off slice.
func TestJournalABCountsFlushInOnSlice(t *testing.T) {
	f := &flow{}
	g := &journalGate{to: seqJournalFunc{record: func(pump.Record) int64 { return 1 }, delivered: func(int64) {}}}
	var gateAtFlush []bool
	flush := func(context.Context) error {
		gateAtFlush = append(gateAtFlush, g.on.Load())
		f.sunk.Add(100)
		return nil
	}
	on, off, err := f.journalAB(context.Background(), 8*time.Millisecond, g, flush)
	if err != nil {
		t.Fatal(err)
	}
	// Slices 0, 3, 4 and 7 journal; 0 and 4 precede off slices, 7 is last.
	if d := cmp.Diff([]bool{false, false, false}, gateAtFlush); d != "" {
		t.Errorf("gate open at each flush (-want +got):\n%s", d)
	}
	if on.envelopes != 2*300 || off.envelopes != 0 {
		t.Errorf("envelopes on %d, off %d; want 600 (the flushes'), 0", on.envelopes, off.envelopes)
	}
	if !g.on.Load() {
		t.Error("the gate stays closed after the A/B phase")
	}
}
