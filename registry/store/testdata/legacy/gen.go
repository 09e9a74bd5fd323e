//go:build ignore

// gen writes legacy-v11.db.gz and legacy-v11.json.gz into registry/store/testdata: a data
// directory's database in the layout the store had before the journal
// became one row per envelope (schema_version 11: journal segments, lookup
// keys, delivery marks, kernel state, users, sessions, OOB signatures, LLM
// calls, approvals), and what it holds. TestMigrateLegacy migrates it.
//
// It was run once, with the store of commit ab07184 (the last with that
// layout): `go run ./registry/store/testdata/legacy/gen.go`. Run against a
// later store it would write the new layout, so it is kept as the record of
// how the fixture was made, not to be run again.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
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
const entries = 1200

// manifest is what the fixture holds, for the test to check.
type manifest struct {
	Entries     []entry  `json:"entries"`
	Tombstoned  []int64  `json:"tombstoned"`
	Undelivered []int64  `json:"undelivered"`
	HighSeq     int64    `json:"high_seq"`
	Threads     []string `json:"threads"`
	Users       []string `json:"users"`
	Calls       int      `json:"calls"`
	Approvals   []string `json:"approvals"`
	Signatures  int      `json:"signatures"`
}

type entry struct {
	Seq          int64  `json:"seq"`
	TimeNS       int64  `json:"time_ns"`
	Thread       string `json:"thread"`
	Conversation string `json:"conversation"`
	Direction    string `json:"direction"`
	Kind         string `json:"kind"`
	From         string `json:"from"`
	To           string `json:"to"`
	Listener     string `json:"listener"`
	PayloadTag   string `json:"payload_tag"`
	SHA256       string `json:"sha256"`
	Diagnostics  string `json:"diagnostics"`
}

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "legacy-")
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
	var m manifest
	listeners := []string{"shouter", "sink", "tool", ""}
	for i := 0; i < entries; i++ {
		now = base.Add(time.Duration(i) * time.Millisecond)
		conv := fmt.Sprintf("conv-%03d", i%97)
		e := store.Entry{
			Thread:       fmt.Sprintf("thread-%04d", i%189),
			Conversation: conv,
			Direction:    store.Direction(1 + i%2),
			Kind:         store.Kind(1 + i%6),
			From:         "greeter",
			To:           listeners[i%3],
			Listener:     listeners[i%4],
			PayloadTag:   "Greeting",
			Bytes:        fmt.Appendf(nil, `<message><Greeting><Name>Dan %d</Name></Greeting></message>`, i),
		}
		if i%50 == 7 {
			e.Diagnostics = fmt.Sprintf("repaired %d\nsecond line", i)
		}
		if i%500 == 13 { // a dead letter of unreadable input: no thread, no sender, raw bytes
			e.Kind, e.Thread, e.From, e.Conversation = store.DeadLetter, "", "", ""
			e.Bytes = []byte{'<', 0xff, 0x00, 'x', '>', byte(i)}
		}
		if i%300 == 100 { // a group of three
			group := []store.Entry{e, e, e}
			for k := range group {
				group[k].Bytes = append(append([]byte(nil), e.Bytes...), byte('a'+k))
			}
			if _, err := s.AppendGroup(group); err != nil {
				log.Fatal(err)
			}
			i += 2
			continue
		}
		if _, err := s.AppendSeq(e); err != nil {
			log.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Delivery marks: most messages in order, some out of order above the
	// watermark, some never (they stay undelivered).
	all, err := s.After(0, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range all {
		if e.Kind != store.Message || e.Listener == "" {
			continue
		}
		if e.Seq < 700 || (e.Seq%3 == 0 && e.Seq%7 != 0) {
			if err := s.MarkDelivered(e.Seq); err != nil {
				log.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Retention: prune the delivered messages of "tool" (tombstones).
	n, err := s.Sweep(ctx, func(l, _ string) store.Retention {
		if l == "tool" {
			return store.Retention{Policy: store.PruneOnDelivery}
		}
		return store.Retention{}
	})
	if err != nil || n == 0 {
		log.Fatalf("sweep: %d %v", n, err)
	}
	// Kernel state, users, sessions, calls, approvals, signatures.
	for i := range 5 {
		id := fmt.Sprintf("thread-%04d", i)
		m.Threads = append(m.Threads, id)
		must(s.PutThread(store.ThreadRow{ID: id, Path: []string{"console", "greeter"}, Created: base, Touched: base}))
		must(s.PutWatcher(store.WatcherRow{ID: fmt.Sprintf("w%d", i), Thread: id, Issuer: "greeter", WaitFor: "Done", Created: base}))
		must(s.PutSlot(store.SlotRow{Thread: id, Index: 0, From: "console", To: "greeter", PayloadType: "Greeting", Raw: []byte("<Greeting/>"), Time: base}))
	}
	for _, u := range []string{"alice", "bob"} {
		m.Users = append(m.Users, u)
		must(s.PutUser(ctx, store.UserRow{Name: u, PasswordHash: "$argon2id$x", Role: "admin", Created: base}))
	}
	must(s.PutSession(ctx, store.SessionRow{TokenHash: "tok", User: "alice", Created: base, Expires: base.Add(time.Hour)}))
	for i := range 3 {
		id, err := s.AppendCall(store.CallRow{Time: base, Conversation: "conv-001", Agent: "poet", Backend: "local", Model: "m", Attempt: 1, PromptTokens: 10 + i})
		if err != nil {
			log.Fatal(err)
		}
		must(s.LinkCalls([]int64{id}, 5))
		m.Calls++
	}
	for _, id := range []string{"ap-1", "ap-2"} {
		m.Approvals = append(m.Approvals, id)
		must(s.PutApproval(store.ApprovalRow{ID: id, Seq: 7, Agent: "poet", Kind: "tool", CreatedAt: base, Status: store.ApprovalPending}))
	}
	must(s.DecideApproval(ctx, "ap-2", store.ApprovalApproved, "alice", "fine", base))
	for i := range 2 {
		must(s.RememberSignature(ctx, []byte{byte(i), 1, 2, 3}, base.Add(100*365*24*time.Hour), base))
		m.Signatures++
	}
	if err := s.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	// The manifest, from what the store now reads back.
	all, err = s.After(0, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range all {
		if sha256.Sum256(e.Bytes) != e.SHA256 {
			log.Fatalf("seq %d: hash", e.Seq)
		}
		m.Entries = append(m.Entries, entry{Seq: e.Seq, TimeNS: e.Time.UnixNano(), Thread: e.Thread,
			Conversation: e.Conversation, Direction: e.Direction.String(), Kind: e.Kind.String(), From: e.From,
			To: e.To, Listener: e.Listener, PayloadTag: e.PayloadTag, SHA256: hex.EncodeToString(e.SHA256[:]),
			Diagnostics: e.Diagnostics})
	}
	und, err := s.Undelivered()
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range und {
		m.Undelivered = append(m.Undelivered, e.Seq)
	}
	if m.HighSeq, err = s.LastSeq(); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		log.Fatal(err)
	}
	rows, err := db.Query(`SELECT seq FROM journal_tombstones ORDER BY seq`)
	if err != nil {
		log.Fatal(err)
	}
	for rows.Next() {
		var seq int64
		must(rows.Scan(&seq))
		m.Tombstoned = append(m.Tombstoned, seq)
	}
	rows.Close()
	// Small pages and no WAL keep the file small; the layout is the same.
	for _, q := range []string{`PRAGMA journal_mode = DELETE`, `PRAGMA page_size = 1024`, `VACUUM`} {
		if _, err := db.Exec(q); err != nil {
			log.Fatal(q, err)
		}
	}
	must(db.Close())
	raw, err := os.ReadFile(filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		log.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	must(zw.Close())
	out := filepath.Join("registry", "store", "testdata")
	must(os.WriteFile(filepath.Join(out, "legacy-v11.db.gz"), gz.Bytes(), 0o644))
	js, err := json.Marshal(m)
	if err != nil {
		log.Fatal(err)
	}
	gz.Reset()
	zw = gzip.NewWriter(&gz)
	zw.Write(js)
	must(zw.Close())
	must(os.WriteFile(filepath.Join(out, "legacy-v11.json.gz"), gz.Bytes(), 0o644))
	fmt.Printf("%d entries, %d tombstones, %d undelivered, db %d bytes, manifest %d bytes gzipped\n", len(m.Entries),
		len(m.Tombstoned), len(m.Undelivered), len(raw), gz.Len())
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
