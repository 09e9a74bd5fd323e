package store

// journalRebuildV4 rebuilds the journal table with the same columns and
// rows but cheaper CHECK constraints, and without the (listener, time_ns)
// index (migration 4).
//
// In a multi-row INSERT, SQLite evaluated `kind IN ('message', 'huh',
// 'system-error', 'dead-letter')` at about 2.5 µs per row, a third of a
// plain insert (it builds the IN list's lookup table again for each row);
// the equivalent chain of equalities costs next to nothing. The
// (listener, time_ns) index cost another ~1 µs per row; the retention sweep
// no longer needs it (it walks the journal in seq order, see
// retention_walk.go).
//
// SQLite cannot alter a CHECK constraint in place, so the table is renamed,
// recreated and copied (SQLite's documented "generalized ALTER TABLE
// procedure"); dropping the old table drops its indexes and triggers, which
// are then recreated. The copy is one-off and proportional to the journal
// (seconds per million rows).
var journalRebuildV4 = `
ALTER TABLE journal RENAME TO journal_v3;
CREATE TABLE journal (
	seq          INTEGER PRIMARY KEY,
	time_ns      INTEGER NOT NULL,
	thread       TEXT    NOT NULL,
	conversation TEXT    NOT NULL DEFAULT '',
	direction    TEXT    NOT NULL CHECK (direction = 'inbound' OR direction = 'outbound'),
	kind         TEXT    NOT NULL CHECK (kind = 'message' OR kind = 'huh' OR kind = 'system-error' OR kind = 'dead-letter'),
	from_name    TEXT    NOT NULL,
	to_name      TEXT    NOT NULL DEFAULT '',
	listener     TEXT    NOT NULL DEFAULT '',
	payload_tag  TEXT    NOT NULL DEFAULT '',
	sha256       BLOB    NOT NULL CHECK (length(sha256) = 32),
	bytes        BLOB    NOT NULL CHECK (length(bytes) > 0),
	diagnostics  TEXT    NOT NULL DEFAULT '',
	CHECK (kind = 'dead-letter' OR (thread <> '' AND from_name <> ''))
);
INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind, from_name, to_name, listener,
	payload_tag, sha256, bytes, diagnostics)
SELECT seq, time_ns, thread, conversation, direction, kind, from_name, to_name, listener,
	payload_tag, sha256, bytes, diagnostics FROM journal_v3 ORDER BY seq;
DROP TABLE journal_v3;
CREATE INDEX journal_thread_part ON journal (` + partitionExpr + `, thread);
CREATE INDEX journal_conversation_part ON journal (` + partitionExpr + `, conversation);
CREATE TRIGGER journal_append_only BEFORE UPDATE ON journal
BEGIN
	SELECT RAISE(ABORT, 'journal is append-only');
END;
CREATE TRIGGER journal_delete_needs_tombstone BEFORE DELETE ON journal
WHEN NOT EXISTS (SELECT 1 FROM journal_tombstones WHERE seq = OLD.seq)
BEGIN
	SELECT RAISE(ABORT, 'journal rows are deleted only after a tombstone');
END;
`
