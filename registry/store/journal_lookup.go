package store

import "strconv"

// journalPartitionBits sets the partitions of the thread and conversation
// lookup indexes: seqs s and t share a partition when s>>bits == t>>bits
// (1024 consecutive seqs). It is part of the schema (migration 3): changing
// it takes a new migration.
const journalPartitionBits = 10

// partitionExpr is the indexed partition expression; queries must spell it
// the same way for SQLite to use the indexes.
var partitionExpr = "(seq >> " + strconv.Itoa(journalPartitionBits) + ")"

// migrationPartitionedLookups replaces the (thread, seq) and (conversation,
// seq) indexes by indexes on (partition, thread) and (partition,
// conversation).
//
// Thread and conversation ids are random UUIDs, so in an index led by them
// every journal row lands on a random leaf page: each commit dirtied about
// one page per row per index, and writing those pages to the WAL and back
// to the database cost three times the rest of the append (go-deps.md
// §2.7; see BenchmarkJournalFlow). Led by the partition, new entries land in
// the last partition's few leaf pages, which every commit rewrites anyway.
// A lookup by id probes each partition once (journalLookupQuery): 4–10 µs
// per 1024 journal rows on the test machine (BenchmarkThreadLookup), so up
// to 10 ms in a million-row journal. Callers that need every thread should read the
// journal once in seq order rather than look each thread up.
var migrationPartitionedLookups = `
DROP INDEX journal_thread;
DROP INDEX journal_conversation;
CREATE INDEX journal_thread_part ON journal (` + partitionExpr + `, thread);
CREATE INDEX journal_conversation_part ON journal (` + partitionExpr + `, conversation);
`

// journalLookupQuery returns the query selecting cols (unqualified journal
// columns) of the journal rows whose column ("thread" or "conversation")
// equals the query's one argument, in seq order. It walks the partitions
// from the oldest row's to the newest's and probes the partitioned index in
// each.
func journalLookupQuery(cols, column string) string {
	return `WITH RECURSIVE part(n) AS (
		SELECT (SELECT min(seq) FROM journal) >> ` + strconv.Itoa(journalPartitionBits) + `
		UNION ALL
		SELECT n + 1 FROM part WHERE n < (SELECT max(seq) FROM journal) >> ` + strconv.Itoa(journalPartitionBits) + `)
	SELECT ` + cols + ` FROM part CROSS JOIN journal ON ` + partitionExpr + ` = part.n AND ` + column + ` = ?1
	ORDER BY seq`
}

// Lookup queries of the journal by thread and by conversation, for
// Reader.Thread and Reader.Conversation.
var (
	threadLookup       = journalLookupQuery(entryColumns, "thread")
	conversationLookup = journalLookupQuery(entryColumns, "conversation")
)
