// Package store is xmlpipe's durable store: one SQLite database per data
// directory holding the message journal, the durable kernel state (threads,
// todo watchers, context-buffer slots, their context segments and the notes
// of removed histories: context_expiries.go), the main bus's users and sessions,
// OOB request signatures, LLM calls and approvals.
//
// A Store owns its directory exclusively (an flock on dir/LOCK). Every write
// goes through one writer goroutine that group-commits batches of operations
// in single transactions; reads use a separate read-only connection pool and
// never wait for the writer. A checkpointer copies the WAL into the database
// file on a connection of its own, so that the writer never stops for it
// (checkpoint.go). Reads see committed data only: call Flush first to read
// your own asynchronous writes. OpenReadOnly opens a Reader without
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
// directory of the legacy segment layout once, straight into the current
// layout (legacy.go, kernel_layout.go), and refuses one of the layouts
// only development builds wrote (unreleased_layouts.go).
//
// These choices are measured rather than obvious (BenchmarkJournalFlow, the
// store traffic of `xmlpipe bench --journal`, on 2 shared cores):
//
//   - The writer goes through database/sql like every other connection
//     (writeconn.go): one connection held for the store's lifetime, its
//     statements prepared once, rows inserted 64 to a statement. The
//     journal's INSERT hands the driver its arguments as driver values
//     through Conn.Raw (database/sql would convert each of its 512
//     arguments and allocate a slice of them at every Exec), values that
//     view the entry's fields in place rather than boxed copies
//     (rowvalues.go), and the envelope as a string viewing its bytes, not
//     a copy. The driver allocates, copies, unbinds and frees C memory for
//     each text and blob argument and looks up, type-switches and binds
//     each argument under SQLite's mutex, and SQLite spends opcodes on
//     each column, so a row binds eight values (journal_routes.go): seq,
//     time, thread, conversation, the id of its route (direction, kind,
//     sender, recipient, listener, root tag and profile, entered once in
//     journal_routes), digest, envelope and a diagnostics that is NULL
//     when empty. The floor through the same
//     path (BenchmarkJournalFloor, 256 rows a commit, load 6-12) is 2.3-3.4
//     µs of CPU per row for a table of seq and envelope alone, of which
//     the COMMITs (WAL write and checkpoints) take 1.0-1.7; a row of eight
//     values costs 4.4-5.0 (commits 1.6-1.7), a row of the development
//     layout before routes (14 values, names as five ids, CASEs naming
//     direction and kind) 5.1-5.6. BenchmarkJournalFlow, six interleaved
//     runs at load 6-11, medians: 11.9 µs per envelope (/default) and
//     12.2 (/lagging) against 13.1 and 13.8 before routes (39 against 40
//     WAL pages of 16 KiB per 1000 envelopes). Delivery marks wait in a
//     buffer and enter the write queue as one op per group commit (marks.go), inside an op sent
//     after they were made, so that a mark never commits before what was
//     queued ahead of it (the journaled answer of the message it marks):
//     a mark costs the process 182-358 ns of CPU instead of 640-987 as an
//     op of its own (BenchmarkMarkDelivered, five interleaved pairs at
//     load 3.7-3.9, medians 245 against 749), which BenchmarkJournalFlow
//     does not resolve (five pairs at load 4.5-4.8, medians 11.6 against
//     11.6 µs per envelope /default, 10.4 against 11.3 /lagging), nor
//     does `xmlpipe bench --journal` (six pairs at load 3.4-5.4: on/off
//     median 0.80 against 0.80, the journal adding 5.6-14.4 µs of CPU
//     per envelope, median 11.2, against 7.1-16.2, median 14.3). The
//     writer moves them when the op that begins a batch arrives: moving
//     them right after each commit gave it transactions of marks alone
//     whenever a durability waiter hurried it, and tripled TestCrashSoak's
//     p50 latency. Taking the marks beside the queue at each transaction
//     instead let a mark commit before that answer, and a SIGKILL then
//     left an acknowledged conversation unanswered (TestCrashSoak, 1 in 3
//     runs); it was taken out, and TestBufferedMarksFollowTheQueue fails
//     against it. Building the append's op in place instead of copying
//     the Entry twice on the way (~30 ns) measured nothing outside the
//     noise: not taken. A larger WAL (wal_autocheckpoint 4000 pages
//     instead of 1000) saved 0.2-0.5 µs in five interleaved pairs, within
//     their noise, for a WAL file of 64 MiB instead of 16: not taken;
//     nor was keeping the queued ops in the writer's batch as pointers
//     rather than copies of their ~420 bytes (six pairs, medians 10.5
//     against 11.0 µs /default, 10.3 against 9.9 /lagging). What
//     remains is mostly SQLite's and the driver's per row and the bytes:
//     the envelope is written three times (WAL, checkpoint, and the
//     kernel's writeback of both), which no layout that keeps it as text
//     avoids, and the pump's SHA-256 of it (~0.6 µs). At the 35-55 µs of
//     CPU an envelope costs `xmlpipe bench` without a journal, each µs the
//     journal adds lowers its on/off ratio by one to two hundredths, and on
//     2 cores shared at load 5-11 a pair of runs moves by more than that:
//     six interleaved pairs of `xmlpipe bench --journal --duration 5s` at
//     load 5-7 gave on/off 0.58-0.89 (median 0.78; routes, with the marks
//     beside the queue) against 0.66-0.95 (median 0.83) before routes,
//     the journal adding 12-16 µs of CPU per envelope (median 14.7)
//     against 11-18 (median 13.5), and six at load 9-11 0.60-0.96 (median
//     0.72) against 0.66-0.94 (median 0.78) with routes: the end-to-end
//     ratio does not resolve a few µs on this machine, the profile and the
//     store's benchmarks do. Earlier layouts gave ~10.5-13.8 µs (BenchmarkJournalFlow)
//     with boxed values bound as names, 14.5-15.5 through sql.Stmt.Exec
//     with a copied envelope, ~10 through a hand-written binding over
//     modernc's C API and ~6.2 in S2-compressed segments; dropping
//     journal_rows' CHECK constraints saved ~0.5 µs. Generated
//     columns (computed at every INSERT) cost ~7 µs a row (schema.go).
//   - A batch nobody waits for lingers (Options.BatchLinger, 25 ms): when
//     the batch delay (10 ms) ends and no WaitDurable or WaitCommitted
//     caller, synchronous write or extension write told of its outcome
//     waits for it, the writer gathers on until the linger ends (such a
//     caller arriving meanwhile ends it). Every commit rewrites the
//     journal's last leaf and interior pages and journal_state, so fewer,
//     larger commits cost less per row. BenchmarkJournalFlow/paced (the
//     bench's rate, ~17 appends per ms), six interleaved pairs at load
//     4.7-6.3: 14.0-15.3 µs of CPU per envelope (median 14.8) against
//     15.1-17.5 (median 16.6) with lingering off (/paced-nolinger),
//     ~520 against ~235 rows a commit, 48 against 59-62 WAL pages and
//     0.035 against 0.050 statements per 1000 and per envelope. Under
//     `xmlpipe bench --journal` commits grow from 140-400 rows to 350-980
//     and statements per envelope fall from 0.042-0.059 to 0.028-0.036,
//     but its on/off ratio does not resolve the gain: fourteen
//     interleaved pairs at load 5-7.5 gave a median of 0.81 (0.64-1.12)
//     against 0.79 (0.59-0.98). A smaller write page cache (2 MiB instead
//     of 16) measured worse in five pairs of five: not taken.
//   - A batch a WaitDurable caller hurries gathers for up to 1 ms more
//     when the previous commit left operations queued (Options.BusyGather,
//     gather_test.go). Under the main bus's durable acknowledgements every
//     hop's waiter hurried the writer, so each commit carried the few
//     operations that arrived during the one before: `xmlpipe bench --bus`
//     made 0.44-0.47 commits and 3.4-3.7 WAL pages per reply, and the
//     writer took ~29 % of the CPU. Gathering gives 0.11-0.13 commits and
//     1.5-1.7 pages; three interleaved pairs (load 0.6-1.5) gave 3,818 →
//     4,889, 4,021 → 4,530 and 3,905 → 3,997 replies/s closed loop, and
//     at 2,000 sends/s 734-750 → 619-651 µs of CPU per reply with p50
//     2.2-3.6 → 3.1-4.0 ms and p99 24-49 → 25-32 ms. A lone waiter is
//     never held (its commit leaves nothing queued): the sequential
//     federated call's p50 did not move (1,506-1,617 against 1,574-1,695
//     µs). Holding every hurried batch instead (gathering whenever the
//     last commit was recent) raised the local call's p50 from 0.35 to
//     1.56 ms.
//   - journal_rows has no secondary index: indexes on thread and
//     conversation (random UUIDs, so every row dirties a page of each)
//     cost the writer 12-17 µs more per envelope (26-32 against 14 µs of
//     CPU over 60,000 envelopes, growing with the journal). Thread and
//     conversation lookups go through lookup keys written once per 1024
//     rows (journal_keys.go); every other query the code runs reads a seq
//     range. A query by thread in sqlite3 scans the table, which is what an
//     operator's ad-hoc query can afford. Whether a thread was ever
//     journaled is answered from a Bloom filter (thread_filter.go).
//
// Package store imports nothing else from xmlpipe; callers adapt their
// in-memory types to the plain row types defined here.
package store
