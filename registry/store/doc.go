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
// The journal is one row per envelope in the journal table (schema.go), the
// envelope stored as text, so sqlite3 can read it:
//
//	sqlite3 -readonly data/xmlpipe.db "SELECT seq, time, sender, recipient, root, payload FROM journal WHERE thread = '…'"
//
// It is append-only: rows are never edited, and the retention sweep deletes
// a row only after recording a tombstone for its seq, so Verify can tell
// pruning from loss; triggers enforce both rules. Delivery marks are a
// watermark plus the deliveries made out of order above it (deliveries.go);
// sweeps walk the journal in seq order from a cursor per listener
// (retention.go). The tables, and how to add one, are in schema.go; Open
// migrates a data directory of the layout before this one (legacy.go).
//
// Two choices are measured rather than obvious (go test -bench
// BenchmarkWriterPath ./registry/store/, 2 shared cores):
//
//   - The writer drives its connection through the SQLite C API that
//     modernc.org/sqlite exports (rawconn.go), not database/sql: journaling
//     a row of the `xmlpipe bench --journal` flow costs the writer 4.9 µs
//     of CPU that way and 8.7 µs through database/sql with the same
//     multi-row statements and transactions, where the whole journal may
//     cost the pump ~8 µs per envelope to keep `bench --journal` at 0.85 of
//     its speed without one. database/sql converts every argument, and the
//     driver allocates, copies and frees C memory for each text.
//   - The journal has no secondary index: each index on it, even one whose
//     keys land at its right edge, costs the writer ~3 µs per row, and one
//     led by a thread id (a random UUID) dirties a page per row at every
//     commit (60 µs per row). Thread and conversation lookups go through
//     lookup keys written once per 1024 rows (journal_keys.go); every other
//     query the code runs reads a seq range.
//
// Package store imports nothing else from xmlpipe; callers adapt their
// in-memory types to the plain row types defined here.
package store
