package store

import (
	"context"
	"database/sql"
)

// migration is one schema step. Versions are 1-based and contiguous; the
// position in migrations is the version minus one. Migrations are only ever
// appended: a released step is never edited.
type migration struct {
	version int
	name    string
	sql     string
	// fn, when set, runs after sql in the migration's transaction.
	fn func(ctx context.Context, tx *sql.Tx) error
}

// migrations is the ordered schema history of the store database.
var migrations = []migration{
	{version: 1, name: "journal", sql: migrationJournal},
	{version: 2, name: "kernel state, users and sessions", sql: migrationKernel},
	{version: 3, name: "partitioned thread and conversation lookups", sql: migrationPartitionedLookups},
	{version: 4, name: "cheaper journal checks, retention in seq order, delivery watermark", sql: migrationV4},
	{version: 5, name: "journal lookup keys instead of per-row lookup indexes", sql: migrationLookupKeys},
	{version: 6, name: "delivery marks by journal partition", sql: deliveredPartsV6},
	{version: 7, name: "journal bodies compressed in packs", sql: journalPacksV7},
	{version: 8, name: "journal in segments", sql: journalSegmentsV8, fn: migrateToSegments},
	{version: 9, name: "OOB request signatures", sql: oobSignaturesV9},
	{version: 10, name: "LLM calls", sql: llmCallsV10},
	{version: 11, name: "approvals", sql: approvalsV11},
	{version: 12, name: "correlation refs of threads and slots", sql: correlationRefsV12},
	{version: 13, name: "consented memory", sql: memoryV13},
	{version: 14, name: "context segments: tiers and fold summaries", sql: contextSegmentsV14},
}

// migrationV4 adds the journal listeners and their sweep cursors
// (journal_listeners.go) and the delivery watermark (deliveries.go), then
// rebuilds the journal with cheaper CHECK constraints and without the
// (listener, time_ns) index (journal_checks.go).
var migrationV4 = journalListenersV4 + deliveryWatermarkV4 + journalRebuildV4

// migrationJournal creates the append-only journal, its tombstones, delivery
// marks and high-water mark. Triggers make the journal append-only and allow
// a journal row to be deleted only after its tombstone exists.
const migrationJournal = `
CREATE TABLE journal (
	seq          INTEGER PRIMARY KEY,
	time_ns      INTEGER NOT NULL,
	thread       TEXT    NOT NULL,
	conversation TEXT    NOT NULL DEFAULT '',
	direction    TEXT    NOT NULL CHECK (direction IN ('inbound', 'outbound')),
	kind         TEXT    NOT NULL CHECK (kind IN ('message', 'huh', 'system-error', 'dead-letter')),
	from_name    TEXT    NOT NULL,
	to_name      TEXT    NOT NULL DEFAULT '',
	listener     TEXT    NOT NULL DEFAULT '',
	payload_tag  TEXT    NOT NULL DEFAULT '',
	sha256       BLOB    NOT NULL CHECK (length(sha256) = 32),
	bytes        BLOB    NOT NULL CHECK (length(bytes) > 0),
	diagnostics  TEXT    NOT NULL DEFAULT '',
	CHECK (kind = 'dead-letter' OR (thread <> '' AND from_name <> ''))
);
CREATE INDEX journal_thread ON journal (thread, seq);
CREATE INDEX journal_conversation ON journal (conversation, seq);
CREATE INDEX journal_listener_time ON journal (listener, time_ns);

CREATE TABLE journal_tombstones (
	seq        INTEGER PRIMARY KEY,
	deleted_at INTEGER NOT NULL,
	reason     TEXT    NOT NULL
);

CREATE TABLE journal_deliveries (
	seq          INTEGER PRIMARY KEY,
	delivered_at INTEGER NOT NULL
);

CREATE TABLE journal_state (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	high_seq INTEGER NOT NULL
);
INSERT INTO journal_state (id, high_seq) VALUES (1, 0);

CREATE TRIGGER journal_append_only BEFORE UPDATE ON journal
BEGIN
	SELECT RAISE(ABORT, 'journal is append-only');
END;
CREATE TRIGGER journal_delete_needs_tombstone BEFORE DELETE ON journal
WHEN NOT EXISTS (SELECT 1 FROM journal_tombstones WHERE seq = OLD.seq)
BEGIN
	SELECT RAISE(ABORT, 'journal rows are deleted only after a tombstone');
END;
CREATE TRIGGER journal_tombstones_immutable_update BEFORE UPDATE ON journal_tombstones
BEGIN
	SELECT RAISE(ABORT, 'journal tombstones are immutable');
END;
CREATE TRIGGER journal_tombstones_immutable_delete BEFORE DELETE ON journal_tombstones
BEGIN
	SELECT RAISE(ABORT, 'journal tombstones are immutable');
END;
`

// migrationKernel creates the durable kernel state (threads, todo watchers,
// context-buffer slots) and the main bus's users and sessions.
const migrationKernel = `
CREATE TABLE threads (
	id         TEXT    PRIMARY KEY,
	parent     TEXT    NOT NULL DEFAULT '',
	path       TEXT    NOT NULL,
	created_ns INTEGER,
	touched_ns INTEGER
);

CREATE TABLE watchers (
	id             TEXT    PRIMARY KEY,
	thread         TEXT    NOT NULL,
	issuer         TEXT    NOT NULL DEFAULT '',
	wait_for       TEXT    NOT NULL DEFAULT '',
	from_listener  TEXT    NOT NULL DEFAULT '',
	description    TEXT    NOT NULL DEFAULT '',
	raised         INTEGER NOT NULL DEFAULT 0,
	triggered_from TEXT    NOT NULL DEFAULT '',
	created_ns     INTEGER
);
CREATE INDEX watchers_thread ON watchers (thread);

CREATE TABLE slots (
	thread       TEXT    NOT NULL,
	idx          INTEGER NOT NULL,
	from_name    TEXT    NOT NULL DEFAULT '',
	to_name      TEXT    NOT NULL DEFAULT '',
	payload_type TEXT    NOT NULL DEFAULT '',
	raw          BLOB    NOT NULL,
	time_ns      INTEGER,
	own_name     TEXT    NOT NULL DEFAULT '',
	is_self_call INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (thread, idx)
);

CREATE TABLE users (
	name           TEXT    PRIMARY KEY,
	password_hash  TEXT    NOT NULL,
	role           TEXT    NOT NULL,
	totp_secret    TEXT    NOT NULL DEFAULT '',
	totp_last_step INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER,
	last_login     INTEGER
);

CREATE TABLE sessions (
	token_hash TEXT    PRIMARY KEY,
	user       TEXT    NOT NULL REFERENCES users (name) ON DELETE CASCADE,
	created_at INTEGER,
	expires_at INTEGER,
	revoked    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_user ON sessions (user);
CREATE INDEX sessions_expires ON sessions (expires_at);
`
