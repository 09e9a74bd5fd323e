//go:build ignore

// gen writes layout-vN.db.gz and layout-vN.json.gz into
// registry/store/testdata: a data directory's database in the layout of
// the store it is built with, and what its journal view and readers
// return. TestMigrateLayout3, TestMigrateLayout4 and TestMigrateLayout5
// migrate the fixtures to the current layout and check that they read the
// same.
//
// Each fixture was written once, with the store of the last commit of its
// layout: layout 3 (the journal's names as text in journal_rows) with
// eb75f3b, layout 4 (the names as journal_names ids) with 480e189, layout 5
// (the kernel state's threads, watchers and slots as rowid tables) with
// 80b634d and this file as of the commit that added layout-v5.db.gz, by
// `go run ./registry/store/testdata/layoutgen/gen.go -layout N`. The layout
// 3 and 4 fixtures hold no kernel state (their writer did not put any);
// the layout 5 one holds threads, watchers and slots besides. Run
// against a later store it would write the new layout under the old name,
// so it is kept as the record of how the fixtures were made, not to be run
// again.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
	_ "modernc.org/sqlite"
)

// entries is how many journal entries the fixture holds: more than two
// partitions of 1024, so closed partitions have lookup keys.
const entries = 2100

// manifest is what the fixture holds, for the test to check.
type manifest struct {
	// View is every row of the journal view (dumpView).
	View []map[string]*string `json:"view"`
	// Undelivered are the seqs Undelivered returns.
	Undelivered []int64 `json:"undelivered"`
	// Thread5 and PrunedThread5 are the seqs Thread and PrunedOf return
	// for thread-5.
	Thread5       []int64 `json:"thread5"`
	PrunedThread5 []int64 `json:"pruned_thread5"`
	// Threads, Watchers and Slots are what LoadThreads, LoadWatchers and
	// LoadSlots return (layout 5 on).
	Threads  []store.ThreadRow  `json:"threads,omitempty"`
	Watchers []store.WatcherRow `json:"watchers,omitempty"`
	Slots    []store.SlotRow    `json:"slots,omitempty"`
}

func main() {
	layout := flag.Int("layout", 0, "the layout version the store it is built with writes (3, 4 or 5)")
	flag.Parse()
	if *layout == 0 {
		log.Fatal("-layout is required")
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", fmt.Sprintf("layout%d-", *layout))
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	base := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	now := base
	s, err := store.Open(dir, store.Options{Clock: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	listeners := []string{"shouter", "sink", "tool", ""}
	profiles := []string{"", "admin", "admin&ops"}
	senders := []string{"greeter", "user:alice", "shouter", "tool"}
	tags := []string{"Greeting", "Shouted", "ToolCall", ""}
	var seqs []int64
	for i := range entries {
		now = base.Add(time.Duration(i) * time.Second)
		e := store.Entry{
			Thread:       fmt.Sprintf("thread-%d", i%37),
			Conversation: fmt.Sprintf("conv-%d", i%11),
			Direction:    store.Direction(1 + i%2),
			Kind:         store.Message,
			From:         senders[i%len(senders)],
			To:           listeners[(i+1)%len(listeners)],
			Listener:     listeners[i%len(listeners)],
			PayloadTag:   tags[i%len(tags)],
			Profile:      profiles[i%len(profiles)],
			Bytes: fmt.Appendf(nil, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>%s</from><thread>thread-%d</thread></meta><Greeting><Name>n%d</Name></Greeting></message>`,
				senders[i%len(senders)], i%37, i),
		}
		switch {
		case i%97 == 5:
			e.Kind, e.Thread, e.Conversation, e.From, e.To, e.Listener, e.PayloadTag = store.DeadLetter, "", "", "", "", "", ""
			e.Bytes = []byte("<not xml")
		case i%89 == 3:
			e.Kind, e.Diagnostics = store.Huh, "repaired: unclosed tag"
		case i%53 == 7:
			e.Kind = store.Decision
		}
		seq, err := s.AppendSeq(e)
		if err != nil {
			log.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	for i, seq := range seqs {
		if i%3 != 0 {
			if err := s.MarkDelivered(seq); err != nil {
				log.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Prune the delivered entries of "sink" under profile "admin", leaving
	// tombstones with metadata.
	pruned, err := s.Sweep(ctx, func(listener, profile string) store.Retention {
		if listener == "sink" && profile == "admin" {
			return store.Retention{Policy: store.PruneOnDelivery}
		}
		return store.Retention{}
	})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("pruned %d", pruned)
	var m manifest
	if *layout >= 5 {
		if err := putKernelState(ctx, s, base); err != nil {
			log.Fatal(err)
		}
		if m.Threads, err = s.LoadThreads(); err != nil {
			log.Fatal(err)
		}
		if m.Watchers, err = s.LoadWatchers(); err != nil {
			log.Fatal(err)
		}
		if m.Slots, err = s.LoadSlots(); err != nil {
			log.Fatal(err)
		}
		log.Printf("kernel state: %d threads, %d watchers, %d slots", len(m.Threads), len(m.Watchers), len(m.Slots))
	}
	undelivered, err := s.Undelivered()
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range undelivered {
		m.Undelivered = append(m.Undelivered, e.Seq)
	}
	thread, err := s.Thread("thread-5")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range thread {
		m.Thread5 = append(m.Thread5, e.Seq)
	}
	prunedOf, err := s.PrunedOf("thread-5")
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range prunedOf {
		m.PrunedThread5 = append(m.PrunedThread5, p.Seq)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		log.Fatal(err)
	}
	m.View, err = dumpView(db)
	if err != nil {
		log.Fatal(err)
	}
	db.Close()
	raw, err := os.ReadFile(filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		log.Fatal(err)
	}
	text, err := json.Marshal(m)
	if err != nil {
		log.Fatal(err)
	}
	for name, data := range map[string][]byte{
		fmt.Sprintf("layout-v%d.db.gz", *layout): raw, fmt.Sprintf("layout-v%d.json.gz", *layout): text} {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		if err := os.WriteFile(filepath.Join("registry", "store", "testdata", name), b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// putKernelState writes threads, watchers and slots through s and deletes
// some of them again: ids in creation order and at random, parents, paths
// with dots, zero times (stored NULL), refs and profiles, raised and
// pending watchers, histories of one to four slots whose payloads range
// from empty to 20 KiB (over a page of 16 KiB), and holes where rows were
// deleted. Enough rows to fill several pages of each table.
func putKernelState(ctx context.Context, s *store.Store, base time.Time) error {
	const threads = 600
	id := func(i int) string {
		if i%3 == 0 { // random, as a client's thread id
			return fmt.Sprintf("%08x-7a1c-4d2e-9f3b-%012x", uint32(i)*2654435761, uint64(i)*0x9e3779b97f4a7c15>>16)
		}
		return fmt.Sprintf("%08x-0000-4000-8000-%012x", 0x10000000+i, i) // in creation order
	}
	profiles := []string{"", "admin", "admin&ops"}
	for i := range threads {
		at := base.Add(time.Duration(i) * time.Millisecond)
		t := store.ThreadRow{ID: id(i), Path: []string{"hello-world", "console:bench", "greeter"},
			Created: at, Touched: at.Add(time.Duration(i%7) * time.Second), Profile: profiles[i%len(profiles)]}
		if i%5 != 0 {
			t.Parent = id(i - 1)
			t.Path = append(t.Path, "shouter", "v1.2.response-handler")
		}
		if i%11 == 0 {
			t.Created, t.Touched = time.Time{}, time.Time{}
		}
		if i%4 == 1 {
			t.Ref = fmt.Sprintf("ref-%d", i)
		}
		if err := s.PutThread(t); err != nil {
			return err
		}
		if i%2 == 0 {
			w := store.WatcherRow{ID: fmt.Sprintf("01a21ce9-%04x-7000-8000-%012x", i, i), Thread: t.ID,
				Issuer: "greeter", WaitFor: "shoutedresponse", FromListener: "shouter",
				Description: fmt.Sprintf("waiting for shouter %d", i), Raised: i%4 == 0, Created: at}
			if w.Raised {
				w.TriggeredFrom = "shouter"
			}
			if i%22 == 0 {
				w.Created = time.Time{}
			}
			if err := s.PutWatcher(w); err != nil {
				return err
			}
		}
		for j := range 1 + i%4 {
			raw := fmt.Appendf(nil, "<Greeting><Name>n%d-%d</Name></Greeting>", i, j)
			switch {
			case i%97 == 1 && j == 0:
				raw = []byte{}
			case i%53 == 2:
				raw = bytes.Repeat([]byte("<x>0123456789</x>"), 1+i*j%1200) // up to 20 KiB
			}
			sl := store.SlotRow{Thread: t.ID, Index: j, From: "greeter", To: "shouter", PayloadType: "Greeting",
				Raw: raw, Time: at.Add(time.Duration(j)), OwnName: "shouter", IsSelfCall: j == 3,
				InReplyTo: fmt.Sprintf("ref-%d", i%9)}
			if i%13 == 0 {
				sl.Time = time.Time{}
			}
			if err := s.PutSlot(sl); err != nil {
				return err
			}
		}
		if i%50 == 49 {
			if err := s.Flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		return err
	}
	// Holes: ended threads, closed watchers, deleted histories.
	for i := 0; i < threads; i += 7 {
		if err := s.DeleteThreads([]string{id(i)}); err != nil {
			return err
		}
		if err := s.DeleteSlots(id(i + 1)); err != nil {
			return err
		}
		if i%2 == 0 {
			if err := s.DeleteWatcher(fmt.Sprintf("01a21ce9-%04x-7000-8000-%012x", i+2, i+2)); err != nil {
				return err
			}
		}
	}
	return s.Flush(ctx)
}

// dumpView returns every row of the journal view, each column as its text
// (NULL as nil), in seq order. journal_names_test.go has a copy.
func dumpView(db *sql.DB) ([]map[string]*string, error) {
	rows, err := db.Query(`SELECT * FROM journal ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]*string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := map[string]*string{}
		for i, c := range cols {
			if vals[i].Valid {
				v := vals[i].String
				row[c] = &v
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
