-- index sessions_expires
CREATE INDEX sessions_expires ON sessions (expires_at);

-- index sessions_user
CREATE INDEX sessions_user ON sessions (user);

-- index watchers_thread
CREATE INDEX watchers_thread ON watchers (thread);

-- table journal
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
	bytes        BLOB    CHECK (length(bytes) > 0),
	diagnostics  TEXT    NOT NULL DEFAULT '',
	pack         INTEGER,
	CHECK (kind = 'dead-letter' OR (thread <> '' AND from_name <> '')),
	CHECK ((bytes IS NULL) <> (pack IS NULL))
);

-- table journal_delivered
CREATE TABLE journal_delivered (
	part  INTEGER PRIMARY KEY,
	marks TEXT    NOT NULL CHECK (length(marks) = 1024)
);

-- table journal_keys
CREATE TABLE journal_keys (
	part   INTEGER NOT NULL,
	bucket INTEGER NOT NULL,
	keys   BLOB    NOT NULL,
	PRIMARY KEY (part, bucket)
) WITHOUT ROWID;

-- table journal_listeners
CREATE TABLE journal_listeners (
	listener  TEXT    PRIMARY KEY,
	swept_seq INTEGER NOT NULL DEFAULT 0 CHECK (swept_seq >= 0)
) WITHOUT ROWID;

-- table journal_packs
CREATE TABLE journal_packs (
	first_seq INTEGER PRIMARY KEY,
	last_seq  INTEGER NOT NULL CHECK (last_seq > first_seq),
	codec     INTEGER NOT NULL CHECK (codec = 1),
	data      BLOB    NOT NULL CHECK (length(data) > 0)
);

-- table journal_state
CREATE TABLE journal_state (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	high_seq INTEGER NOT NULL
, delivered_seq INTEGER NOT NULL DEFAULT 0);

-- table journal_tombstones
CREATE TABLE journal_tombstones (
	seq        INTEGER PRIMARY KEY,
	deleted_at INTEGER NOT NULL,
	reason     TEXT    NOT NULL
);

-- table schema_version
CREATE TABLE schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	);

-- table sessions
CREATE TABLE sessions (
	token_hash TEXT    PRIMARY KEY,
	user       TEXT    NOT NULL REFERENCES users (name) ON DELETE CASCADE,
	created_at INTEGER,
	expires_at INTEGER,
	revoked    INTEGER NOT NULL DEFAULT 0
);

-- table slots
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

-- table threads
CREATE TABLE threads (
	id         TEXT    PRIMARY KEY,
	parent     TEXT    NOT NULL DEFAULT '',
	path       TEXT    NOT NULL,
	created_ns INTEGER,
	touched_ns INTEGER
);

-- table users
CREATE TABLE users (
	name           TEXT    PRIMARY KEY,
	password_hash  TEXT    NOT NULL,
	role           TEXT    NOT NULL,
	totp_secret    TEXT    NOT NULL DEFAULT '',
	totp_last_step INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER,
	last_login     INTEGER
);

-- table watchers
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

-- trigger journal_append_only
CREATE TRIGGER journal_append_only BEFORE UPDATE ON journal
BEGIN
	SELECT RAISE(ABORT, 'journal is append-only');
END;

-- trigger journal_delete_needs_tombstone
CREATE TRIGGER journal_delete_needs_tombstone BEFORE DELETE ON journal
WHEN NOT EXISTS (SELECT 1 FROM journal_tombstones WHERE seq = OLD.seq)
BEGIN
	SELECT RAISE(ABORT, 'journal rows are deleted only after a tombstone');
END;

-- trigger journal_packs_delete_unreferenced
CREATE TRIGGER journal_packs_delete_unreferenced BEFORE DELETE ON journal_packs
WHEN EXISTS (SELECT 1 FROM journal WHERE seq BETWEEN OLD.first_seq AND OLD.last_seq AND pack = OLD.first_seq)
BEGIN
	SELECT RAISE(ABORT, 'journal packs are deleted only after their rows');
END;

-- trigger journal_packs_immutable
CREATE TRIGGER journal_packs_immutable BEFORE UPDATE ON journal_packs
BEGIN
	SELECT RAISE(ABORT, 'journal packs are immutable');
END;

-- trigger journal_tombstones_immutable_delete
CREATE TRIGGER journal_tombstones_immutable_delete BEFORE DELETE ON journal_tombstones
BEGIN
	SELECT RAISE(ABORT, 'journal tombstones are immutable');
END;

-- trigger journal_tombstones_immutable_update
CREATE TRIGGER journal_tombstones_immutable_update BEFORE UPDATE ON journal_tombstones
BEGIN
	SELECT RAISE(ABORT, 'journal tombstones are immutable');
END;

