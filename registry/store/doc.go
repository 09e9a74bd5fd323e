// Package store is xmlpipe's durable store: one SQLite database per data
// directory holding the message journal, the durable kernel state (threads,
// todo watchers, context-buffer slots), the main bus's users and sessions,
// OOB request signatures, LLM calls and approvals.
//
// A Store owns its directory exclusively (an flock on dir/LOCK). Every write
// goes through one writer goroutine that group-commits batches of operations
// in single transactions; reads use a separate read-only connection pool and
// never wait for the writer. Reads see committed data only: call Flush first
// to read your own asynchronous writes. OpenReadOnly opens a Reader without
// the lock, for tools that read the journal of a running organism (Follow
// tails it).
//
// The journal is one row per envelope in the journal_rows table
// (schema.go), the envelope stored as text, and the journal view shows
// each row with its time and payload as text, so sqlite3 can read it:
//
//	sqlite3 -readonly data/xmlpipe.db "SELECT seq, time, sender, recipient, root, payload FROM journal WHERE thread = '…'"
//
// Each row records the security profile of the thread it was journaled on
// (Entry.Profile), and the retention policy of an entry is that of its
// listener and profile (RetentionFunc; Either combines two so that
// nothing either keeps is lost).
//
// It is append-only: rows are never edited, and the retention sweep deletes
// a row only after recording a tombstone for its seq holding the entry's
// metadata (everything but its bytes and diagnostics), so Verify can tell
// pruning from loss and the journal view still shows a pruned entry, with
// pruned saying why and when (journal_profiles.go); triggers enforce both
// rules. Delivery marks are a watermark plus the deliveries made out of
// order above it (deliveries.go); sweeps walk the journal in seq order from
// a cursor per (listener, profile) pair (retention.go, retention_walk.go).
// The tables, and how to add one, are in schema.go; Open migrates a data
// directory of an older layout once: the legacy segments (legacy.go),
// layout 1 (profiles.go), layout 2 (journal_profiles.go) and layout 3
// (journal_names.go).
//
// Two choices are measured rather than obvious (BenchmarkJournalFlow, the
// store traffic of `xmlpipe bench --journal`, on 2 shared cores):
//
//   - The writer goes through database/sql like every other connection
//     (writeconn.go): one connection held for the store's lifetime, its
//     statements prepared once, rows inserted 64 to a statement. The
//     journal's INSERT hands the driver its arguments as driver values
//     through Conn.Raw (database/sql would convert each of its 896
//     arguments and allocate a slice of them at every Exec), values that
//     view the entry's fields in place rather than boxed copies
//     (rowvalues.go), and the envelope as a string viewing its bytes, not
//     a copy. The driver allocates, copies, unbinds and frees C memory for
//     each text and blob argument and binds numbers and NULLs as they are,
//     so direction and kind are bound as numbers that a CASE names, the
//     sender, recipient, listener, root tag and profile as ids into
//     journal_names (layout 4, journal_names.go) and an empty diagnostics
//     as NULL that coalesce stores as the empty string: a row's only text
//     and blob arguments are its thread, conversation, digest and
//     envelope. Journaling an envelope costs the process ~11-13 µs of CPU
//     that way (BenchmarkJournalFlow/default, 100,000 envelopes, 11
//     allocations and 1.3 KB per envelope of which the benchmark's own
//     envelope and ids are 6 and ~1 KB). The names as ids saved ~0.5-0.9 µs
//     (medians of interleaved runs on 2 shared cores at load 2-6: 12.2
//     against 12.8, 12.4 against 13.3, 11.5 against 12.0), 6 % of the WAL
//     (40.1 against 42.6 pages of 16 KiB per 1000 envelopes) and 0.1 KB
//     of allocations per envelope; dropping journal_rows' CHECK
//     constraints (layout 4, schema.go) ~0.5 µs more (medians 11.7-12.0
//     against 12.2-12.6 over 44 interleaved pairs at load 6-9; dropping
//     only those on direction and kind, or on the digest and envelope,
//     saved nothing measurable). Both together, six interleaved runs each
//     at load 9, every run below its pair: medians 11.4 against 13.5 µs
//     (/default), 11.5 against 13.5 (/lagging), 13.6 against 15.3
//     (/batch=160). The layouts before gave ~10.5-13.8 µs
//     with boxed values bound as names (20 allocations, 1.8 KB), 14.5-15.5
//     µs through sql.Stmt.Exec with a copied envelope, ~10 µs through the
//     hand-written binding over modernc's C API this layout first had, and
//     ~6.2 µs in the S2-compressed segments of the layout before it. What
//     remains is mostly the driver's and SQLite's: the driver's C memory
//     for the four text and blob arguments and its locked bind of each of
//     the ten numbers (~1.5-2 µs a row), SQLite building and inserting the
//     row (~2.5 µs), writing and checkpointing the WAL (~1.5 µs; the rows
//     hold the envelope uncompressed) and the lookup keys (~0.5 µs). At
//     the 35-55 µs of CPU an envelope costs `xmlpipe bench` without a
//     journal on a loaded machine, each µs the journal adds lowers its
//     on/off ratio by one to two hundredths. On 2 shared cores at load
//     7-9, six interleaved pairs of `xmlpipe bench --journal --duration
//     5s` gave on/off 0.64-1.06 (median 0.75) for layout 4 against
//     0.58-1.13 (median 0.72) for layout 3, the journal adding 8-18 µs of
//     CPU per envelope (median 13.7) against 6-24 (median 14.1); twelve
//     pairs at load 8-13 with only the names as ids gave 0.54-1.12 (median
//     0.70) against 0.48-0.94 (median 0.74): at such loads the pairs move
//     by more than the store's gain. Earlier evenings gave 0.69-0.82 and
//     0.62-0.95 for layout 3, 0.59-0.83 for the boxed names, 0.26-0.88 for
//     the sql.Stmt.Exec path, 0.67-1.07 for the C-API binding and
//     0.66-0.96 for the segments. One row per envelope through database/sql
//     does not reliably keep the 0.85 the segments kept: the journal costs
//     the pump about twice the CPU the store's own benchmark measures
//     (cache and scheduling interference on 2 shared cores), and most of
//     the store's part is SQLite's and the driver's per row.
//   - journal_rows has no secondary index: indexes on thread and
//     conversation (random UUIDs, so every row dirties a page of each)
//     cost the writer 12-17 µs more per envelope (26-32 against 14 µs of
//     CPU over 60,000 envelopes, growing with the journal). Thread and
//     conversation lookups go through lookup keys written once per 1024
//     rows (journal_keys.go); every other query the code runs reads a seq
//     range. A query by thread in sqlite3 scans the table, which is what an
//     operator's ad-hoc query can afford.
//
// Package store imports nothing else from xmlpipe; callers adapt their
// in-memory types to the plain row types defined here.
package store
