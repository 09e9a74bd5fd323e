package store

import (
	"database/sql/driver"
	"fmt"
)

// kernelSchema holds the durable kernel state: the thread registry
// (threads), the todo registry's watchers and the context buffer's slots.
//
// Each is a WITHOUT ROWID table: its rows live in one b-tree ordered by
// their primary key. As rowid tables (the legacy layout's, kernel_layout.go)
// each row was written twice, into the table and into the automatic index
// of its TEXT key, and a deletion by thread looked the rows up in the
// index before deleting them from both. The kernel rows of a @greeter bus
// reply (three threads and their first slots, a watcher registered and
// raised, a thread and its slot deleted a batch later) dirtied 2.68 WAL
// pages, now 1.44, at 110 against 160 µs of CPU per reply
// (BenchmarkKernelFlow/flow=bus, four interleaved runs, load 3-4);
// `xmlpipe bench --bus` writes ~8 WAL pages per commit instead of ~11.
// SQLite advises WITHOUT ROWID for rows under about a twentieth of a page
// (800 bytes of 16 KiB): threads, watchers and the greeter's slots are;
// with a 4 KiB slot per reply (an agent's message, flow=bus-4KiB) the
// tables cost what they did (3.19 against 3.38 pages per reply, CPU within
// the noise). The price is paid by random keys (thread ids a client
// chooses; the organism mints its thread and watcher ids in creation
// order, which append to the b-tree's last page): whole rows, not index
// entries, spread over the tree, 3.7 WAL pages per reply against 2.8
// (ids=random), and LoadThreads gets them back in key order, not creation
// order, and sorts them (BenchmarkLoadThreads/ids=random: 20,000 threads
// and watchers in ~110 against ~93 ms).
//
// watchers has no index on its thread: no query reads watchers by thread
// (a restart loads them all, deletes go by id), and that index, keyed by
// random thread ids, cost the bus a WAL page per watcher written (~0.36 of
// its 3 pages per reply). Databases that have it lose it at their next
// Open; the table's shape is unchanged, so the layout version is too.
const kernelSchema = threadsSchema + watchersSchema + `
DROP INDEX IF EXISTS watchers_thread;
` + slotsSchema

// The kernel tables, which kernelSchema creates.
const (
	threadsSchema = `
CREATE TABLE IF NOT EXISTS threads (
	id         TEXT    PRIMARY KEY,
	parent     TEXT    NOT NULL DEFAULT '',
	path       TEXT    NOT NULL,
	created_ns INTEGER,
	touched_ns INTEGER,
	ref        TEXT    NOT NULL DEFAULT '',
	profile    TEXT    NOT NULL DEFAULT '',
	hops       INTEGER NOT NULL DEFAULT 0,
	marks      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;`
	watchersSchema = `
CREATE TABLE IF NOT EXISTS watchers (
	id             TEXT    PRIMARY KEY,
	thread         TEXT    NOT NULL,
	issuer         TEXT    NOT NULL DEFAULT '',
	wait_for       TEXT    NOT NULL DEFAULT '',
	from_listener  TEXT    NOT NULL DEFAULT '',
	description    TEXT    NOT NULL DEFAULT '',
	raised         INTEGER NOT NULL DEFAULT 0,
	triggered_from TEXT    NOT NULL DEFAULT '',
	created_ns     INTEGER
) WITHOUT ROWID;`
	slotsSchema = `
CREATE TABLE IF NOT EXISTS slots (
	thread       TEXT    NOT NULL,
	idx          INTEGER NOT NULL,
	from_name    TEXT    NOT NULL DEFAULT '',
	to_name      TEXT    NOT NULL DEFAULT '',
	payload_type TEXT    NOT NULL DEFAULT '',
	raw          BLOB    NOT NULL,
	time_ns      INTEGER,
	own_name     TEXT    NOT NULL DEFAULT '',
	is_self_call INTEGER NOT NULL DEFAULT 0,
	in_reply_to  TEXT    NOT NULL DEFAULT '',
	seq          INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (thread, idx)
) WITHOUT ROWID;`
)

// kernelTable describes one kernel-state table (threads, watchers, slots)
// for coalesced writes: rows are upserted whole by their key and deleted by
// group (a thread id or watcher id is its own group; a slot's group is its
// thread).
type kernelTable struct {
	name   string
	upsert *rowStatement // INSERT OR REPLACE of whole rows
	delete *rowStatement // DELETE … WHERE <group column> IN (…)
	// bornWith, when set, is the table whose groups this table's groups
	// live within: a group begun afresh there (see op.fresh) has no rows
	// committed here either.
	bornWith *kernelTable
}

// The kernel-state tables, in the order their writes are applied.
var (
	threadsTable = &kernelTable{name: "threads",
		upsert: newKernelStatement(`INSERT OR REPLACE INTO threads (id, parent, path, created_ns, touched_ns, ref, profile, hops,
			marks) VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?)`, ``, 9),
		delete: newKernelStatement(`DELETE FROM threads WHERE id IN (`, `?`, `)`, 1)}
	// A watcher is written twice, registered then raised (mostly a batch
	// later): the second write updates the row in place, where INSERT OR
	// REPLACE deleted it and inserted it again.
	watchersTable = &kernelTable{name: "watchers",
		upsert: newKernelStatement(`INSERT INTO watchers (id, thread, issuer, wait_for, from_listener,
			description, raised, triggered_from, created_ns) VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			` ON CONFLICT (id) DO UPDATE SET thread = excluded.thread, issuer = excluded.issuer,
			wait_for = excluded.wait_for, from_listener = excluded.from_listener, description = excluded.description,
			raised = excluded.raised, triggered_from = excluded.triggered_from, created_ns = excluded.created_ns`, 9),
		delete: newKernelStatement(`DELETE FROM watchers WHERE id IN (`, `?`, `)`, 1)}
	slotsTable = &kernelTable{name: "slots",
		upsert: newKernelStatement(`INSERT OR REPLACE INTO slots (thread, idx, from_name, to_name, payload_type, raw,
			time_ns, own_name, is_self_call, in_reply_to, seq) VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ``, 11),
		delete: newKernelStatement(`DELETE FROM slots WHERE thread IN (`, `?`, `)`, 1)}
	// segmentsTable is context_segments (context_segments.go): its rows go
	// with their thread's slots, so they are written the way slots are.
	segmentsTable = &kernelTable{name: "context_segments",
		upsert: newKernelStatement(`INSERT OR REPLACE INTO context_segments (thread, idx, slots, content_type, tier,
			relevance, scored, summary, summary_by, bytes, tokens, changed_ns) VALUES `,
			`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ``, 12),
		delete: newKernelStatement(`DELETE FROM context_segments WHERE thread IN (`, `?`, `)`, 1), bornWith: slotsTable}
	kernelTables = []*kernelTable{threadsTable, watchersTable, slotsTable, segmentsTable, expiriesTable}
)

// kernelKey names a row (or a group of rows) of a kernel table.
type kernelKey struct {
	table *kernelTable
	key   string
}

// kernelWrites coalesces the kernel-state writes of one run of a batch to
// their final effect: for every row only its last upsert is written, an
// upsert followed by the deletion of its group is not written at all, and
// each deleted group is deleted once, before the upserts that came after
// it. The committed state is exactly the one the ops would have produced
// one by one; a row created and deleted inside one batch never reaches the
// database. A group begun afresh in the batch (an op.fresh upsert: a new
// thread, a history's first slot) had nothing committed, so its deletion
// is not written either: a thread that begins and ends within one batch
// costs no statement at all.
type kernelWrites struct {
	ops    []*op             // every op, for error reporting
	puts   []*op             // upserts in order; nil where superseded
	latest map[kernelKey]int // row key → index in puts
	// members chains each group's upserts, last first: members[group] is
	// 1 + the index in puts of its last upsert, prev[i] 1 + that of the
	// upsert before puts[i] in its group (0 ends a chain). A slice per
	// group cost an allocation per group (thread, watcher) of every batch.
	members map[kernelKey]int
	prev    []int
	deletes map[kernelKey]struct{}
	order   []kernelKey // deleted groups in first-deletion order
	// fresh holds the groups begun afresh in this batch.
	fresh map[kernelKey]struct{}
	args  []any
	// vals holds a statement's arguments as driver values: every kernel
	// row value is one already (string, int64, float64, bool, []byte or
	// nil), so they bypass database/sql's conversion, which cost the
	// kernel writes a quarter of their CPU on the bus.
	vals []driver.NamedValue
}

// values returns args as driver values, in k's reused storage.
func (k *kernelWrites) values(args []any) []driver.NamedValue {
	vals := k.vals[:0]
	for _, a := range args {
		vals = append(vals, driver.NamedValue{Value: a})
	}
	k.vals = vals
	return vals
}

// reset empties k for the next run, keeping its storage.
func (k *kernelWrites) reset() {
	clear(k.ops)
	clear(k.puts)
	k.ops, k.puts, k.order, k.prev = k.ops[:0], k.puts[:0], k.order[:0], k.prev[:0]
	clear(k.latest)
	clear(k.members)
	clear(k.deletes)
	clear(k.fresh)
	clear(k.args)
	k.args = k.args[:0]
	clear(k.vals)
	k.vals = k.vals[:0]
}

// name names the run's ops in an error.
func (k *kernelWrites) name() string { return groupName(k.ops, "kernel state") }

// add records one opPut or opDelete.
func (k *kernelWrites) add(o *op) {
	if k.latest == nil {
		k.latest = make(map[kernelKey]int)
		k.members = make(map[kernelKey]int)
		k.deletes = make(map[kernelKey]struct{})
		k.fresh = make(map[kernelKey]struct{})
	}
	k.ops = append(k.ops, o)
	switch o.kind {
	case opPut:
		row := kernelKey{o.table, o.key}
		if i, ok := k.latest[row]; ok {
			k.puts[i] = nil
		}
		k.latest[row] = len(k.puts)
		group := kernelKey{o.table, o.group}
		k.prev = append(k.prev, k.members[group])
		k.puts = append(k.puts, o)
		k.members[group] = len(k.puts)
		if o.fresh {
			k.fresh[group] = struct{}{}
		}
	case opDelete:
		for _, g := range o.groups {
			group := kernelKey{o.table, g}
			for j := k.members[group]; j != 0; j = k.prev[j-1] {
				if p := k.puts[j-1]; p != nil {
					delete(k.latest, kernelKey{o.table, p.key})
					k.puts[j-1] = nil
				}
			}
			delete(k.members, group)
			if k.begunHere(group) {
				// Nothing of the group was committed before it began in
				// this batch, and what it gained since is dropped above;
				// a deletion of what was there before it began, if any,
				// is already in order.
				continue
			}
			if _, ok := k.deletes[group]; !ok {
				k.deletes[group] = struct{}{}
				k.order = append(k.order, group)
			}
		}
	}
}

// begunHere reports whether group was begun afresh in this batch, in its
// own table or in the one its table's groups live within.
func (k *kernelWrites) begunHere(group kernelKey) bool {
	if _, ok := k.fresh[group]; ok {
		return true
	}
	if b := group.table.bornWith; b != nil {
		_, ok := k.fresh[kernelKey{b, group.key}]
		return ok
	}
	return false
}

// applyKernel writes the coalesced kernel state: per table, the deleted
// groups first, then the surviving upserts.
func (w *writer) applyKernel(p *pending) error {
	k := &p.kernel
	if len(k.ops) == 0 {
		return nil
	}
	for _, t := range kernelTables {
		args := k.args[:0]
		for _, g := range k.order {
			if g.table == t {
				args = append(args, g.key)
			}
		}
		if len(args) > 0 {
			if _, err := w.execRowValues(t.delete, len(args), k.values(args)); err != nil {
				return fmt.Errorf("delete %s: %w", t.name, err)
			}
		}
		args = args[:0]
		rows := 0
		for _, o := range k.puts {
			if o != nil && o.table == t {
				args = append(args, o.row...)
				rows++
			}
		}
		k.args = args
		if rows > 0 {
			if _, err := w.execRowValues(t.upsert, rows, k.values(args)); err != nil {
				return fmt.Errorf("upsert %s: %w", t.name, err)
			}
		}
	}
	return nil
}
