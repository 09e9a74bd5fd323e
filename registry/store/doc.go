// Package store is xmlpipe's durable store: one SQLite database per data
// directory holding the message journal, the durable kernel state (threads,
// todo watchers, context-buffer slots) and the main bus's users and sessions.
//
// A Store owns its directory exclusively (an flock on dir/LOCK). Every write
// goes through one writer goroutine that group-commits batches of operations
// in single transactions; reads use a separate read-only connection pool and
// never wait for the writer. Reads see committed data only: call Flush first
// to read your own asynchronous writes. OpenReadOnly opens a Reader without
// the lock, for tools that read the journal of a running organism (Follow
// tails it).
//
// The journal is stored in segments: one row per run of consecutive
// entries committed together, holding their columns and canonical bytes
// S2-compressed (journal_segments.go, journal_segment_codec.go). It is
// append-only: entries are never edited, and the retention sweep deletes an
// entry only after recording a tombstone for its sequence number (then
// rewrites its segment without it, or deletes the segment with its last
// entry), so Verify can tell pruning from loss. Database triggers enforce
// both rules. Sweeps walk the journal in seq order from a cursor per
// listener (retention_walk.go); delivery marks are a watermark plus the
// deliveries made out of order above it (deliveries.go). Thread and
// conversation lookups go through lookup keys the writer stores once per
// 1024 seqs instead of per-entry indexes (journal_keys.go).
//
// Package store imports nothing else from xmlpipe; callers adapt their
// in-memory types to the plain row types defined here.
package store
