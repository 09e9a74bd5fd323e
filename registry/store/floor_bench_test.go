package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkJournalFloor measures what a journal row costs at least through
// the writer's driver path (writeConn.execValues, 64 rows a statement,
// group commits of floorCommitRows rows, the store's connection pragmas),
// without the store's queue, its bookkeeping or the pump: the floor the
// journal's per-envelope CPU can approach. It reports the process CPU per
// row and, separately, the CPU of the COMMITs (WAL write and the
// checkpoints they run) per row.
//
//   - seq+envelope: the cheapest possible row, a table of seq and the
//     envelope as text, two bound values a row.
//   - journal_rows: the journal's own INSERT (journalInsert) with the
//     values the writer binds, into the store's layout (a route id of 0
//     that journal_routes lacks: nothing checks it on insert).
func BenchmarkJournalFloor(b *testing.B) {
	b.Run("seq+envelope", func(b *testing.B) {
		floorLoop(b, `CREATE TABLE floor (seq INTEGER PRIMARY KEY, envelope TEXT NOT NULL)`,
			newRowStatement(`INSERT OR ROLLBACK INTO floor (seq, envelope) VALUES `, `(?, ?)`, ``, 2),
			func(values []driver.NamedValue, r *floorRow) []driver.NamedValue {
				return append(values, driver.NamedValue{Value: int64View(&r.seq)}, driver.NamedValue{Value: stringView(&r.text)})
			})
	})
	b.Run("journal_rows", func(b *testing.B) { floorLoop(b, "", journalInsert, floorJournalRow) })
}

// floorJournalRow binds r as the writer binds a journal row.
func floorJournalRow(values []driver.NamedValue, r *floorRow) []driver.NamedValue {
	return append(values,
		driver.NamedValue{Value: int64View(&r.seq)},
		driver.NamedValue{Value: int64View(&r.time)},
		driver.NamedValue{Value: stringView(&r.thread)},
		driver.NamedValue{Value: stringView(&r.conversation)},
		driver.NamedValue{Value: int64View(&r.ids[0])},
		driver.NamedValue{Value: bytesView(&r.digest)},
		driver.NamedValue{Value: stringView(&r.text)},
		driver.NamedValue{Value: nil})
}

// floorCommitRows is the rows per commit of BenchmarkJournalFloor, about
// what `xmlpipe bench --journal` commits at once.
const floorCommitRows = 256

// floorRow is one row of BenchmarkJournalFloor.
type floorRow struct {
	seq, time            int64
	thread, conversation string
	ids                  [1]int64
	digest               []byte
	text                 string
}

// floorLoop inserts b.N rows with the statement rs (after creating table
// when not empty, into a database with the store's schema), bound by bind,
// committing every floorCommitRows rows.
func floorLoop(b *testing.B, table string, rs *rowStatement, bind func([]driver.NamedValue, *floorRow) []driver.NamedValue) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), DatabaseFileName)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+
		"?_pragma=page_size(16384)&_journal_mode=WAL&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := prepareSchema(ctx, db, filepath.Dir(path), quietLogger()); err != nil {
		b.Fatal(err)
	}
	if table != "" {
		if _, err := db.ExecContext(ctx, table); err != nil {
			b.Fatal(err)
		}
	}
	c, err := newWriteConn(ctx, db, newStatementCounts())
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	for _, q := range writerPragmas {
		if _, err := c.exec(q); err != nil {
			b.Fatal(err)
		}
	}
	const greeting = "Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you!"
	// The rows of one commit, each with its own ~410-byte envelope.
	rows := make([]floorRow, floorCommitRows)
	for i := range rows {
		thread := uuid.NewString()
		rows[i] = floorRow{thread: thread, conversation: uuid.NewString(), digest: make([]byte, 32),
			text: fmt.Sprintf(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>bench</from><to>shouter</to><thread>%s</thread></meta><GreetingResponse xmlns=""><Message>%d %s</Message><OriginalSender>sink</OriginalSender></GreetingResponse></message>`,
				thread, i, strings.Repeat(greeting, 1))}
	}
	values := make([]driver.NamedValue, 0, rs.cols*floorCommitRows)
	b.ReportAllocs()
	var commitCPU time.Duration
	cpu0 := processCPU()
	frames0, _ := c.pagesWritten()
	seq := int64(0)
	n := 0
	flush := func(k int) {
		if _, err := c.exec(`BEGIN IMMEDIATE`); err != nil {
			b.Fatal(err)
		}
		values = values[:0]
		for i := range rows[:k] {
			seq++
			rows[i].seq, rows[i].time = seq, time.Now().UnixNano()
			values = bind(values, &rows[i])
		}
		err := chunkRows(rs, k, values, func(query string, args []driver.NamedValue) error {
			_, err := c.execValues(query, args)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		before := processCPU()
		if _, err := c.exec(`COMMIT`); err != nil {
			b.Fatal(err)
		}
		commitCPU += processCPU() - before
	}
	for b.Loop() {
		n++
		if n == floorCommitRows {
			flush(n)
			n = 0
		}
	}
	if n > 0 {
		flush(n)
	}
	frames, _ := c.pagesWritten()
	rowsN := float64(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/rowsN, "cpu-µs/envelope")
	b.ReportMetric(float64(commitCPU.Microseconds())/rowsN, "commit-cpu-µs/envelope")
	b.ReportMetric(float64(frames-frames0)*1000/rowsN, "WAL-pages/1k-envelopes")
}
