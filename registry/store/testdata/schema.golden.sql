-- index approvals_conversation
CREATE INDEX approvals_conversation ON approvals (conversation, created_at);

-- index approvals_status
CREATE INDEX approvals_status ON approvals (status, created_at);

-- index approvals_thread
CREATE INDEX approvals_thread ON approvals (thread, created_at);

-- index llm_calls_conversation
CREATE INDEX llm_calls_conversation ON llm_calls (conversation, id);

-- index llm_calls_thread
CREATE INDEX llm_calls_thread ON llm_calls (thread, id);

-- index llm_calls_time
CREATE INDEX llm_calls_time ON llm_calls (time_ns);

-- index memory_user
CREATE INDEX memory_user ON memory (user_id, created_at);

-- index oob_signatures_expiry
CREATE INDEX oob_signatures_expiry ON oob_signatures (expires_at);

-- index sessions_expires
CREATE INDEX sessions_expires ON sessions (expires_at);

-- index sessions_user
CREATE INDEX sessions_user ON sessions (user);

-- table approvals
CREATE TABLE approvals (
	id              TEXT    PRIMARY KEY CHECK (id <> ''),
	seq             INTEGER NOT NULL DEFAULT 0,
	conversation    TEXT    NOT NULL DEFAULT '',
	thread          TEXT    NOT NULL DEFAULT '',
	agent           TEXT    NOT NULL,
	target          TEXT    NOT NULL DEFAULT '',
	kind            TEXT    NOT NULL CHECK (kind <> ''),
	payload         TEXT    NOT NULL DEFAULT '',
	request_reason  TEXT    NOT NULL DEFAULT '',
	rules           TEXT    NOT NULL DEFAULT '',
	suggestion      TEXT    NOT NULL DEFAULT '',
	severity        TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	expires_at      INTEGER NOT NULL DEFAULT 0,
	status          TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
	decided_by      TEXT    NOT NULL DEFAULT '',
	reason          TEXT    NOT NULL DEFAULT '',
	decided_at      INTEGER NOT NULL DEFAULT 0,
	owner           TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- table context_expiries
CREATE TABLE context_expiries (
	thread      TEXT    PRIMARY KEY,
	reason      TEXT    NOT NULL CHECK (reason IN ('ttl', 'evicted')),
	last_ns     INTEGER,
	removed_ns  INTEGER,
	ttl_ns      INTEGER NOT NULL DEFAULT 0,
	max_threads INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- table context_segments
CREATE TABLE context_segments (
	thread       TEXT    NOT NULL,
	idx          INTEGER NOT NULL CHECK (idx >= 0),
	slots        TEXT    NOT NULL,
	content_type TEXT    NOT NULL DEFAULT '',
	tier         TEXT    NOT NULL CHECK (tier IN ('expanded', 'folded', 'evicted')),
	relevance    REAL    NOT NULL DEFAULT 0 CHECK (relevance >= 0 AND relevance <= 1),
	scored       INTEGER NOT NULL DEFAULT 0,
	summary      TEXT    NOT NULL DEFAULT '',
	summary_by   TEXT    NOT NULL DEFAULT '',
	bytes        INTEGER NOT NULL DEFAULT 0,
	tokens       INTEGER NOT NULL DEFAULT 0,
	changed_ns   INTEGER,
	PRIMARY KEY (thread, idx)
) WITHOUT ROWID;

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

-- table journal_names
CREATE TABLE journal_names (
	id   INTEGER PRIMARY KEY,
	name TEXT    NOT NULL UNIQUE
);

-- table journal_routes
CREATE TABLE journal_routes (
	id        INTEGER PRIMARY KEY,
	direction TEXT    NOT NULL,
	kind      TEXT    NOT NULL,
	sender    INTEGER NOT NULL,
	recipient INTEGER NOT NULL,
	listener  INTEGER NOT NULL,
	root      INTEGER NOT NULL,
	profile   INTEGER,
	UNIQUE (direction, kind, sender, recipient, listener, root, profile)
);

-- table journal_rows
CREATE TABLE journal_rows (
	seq          INTEGER PRIMARY KEY,
	time_ns      INTEGER NOT NULL,
	thread       TEXT    NOT NULL,
	conversation TEXT    NOT NULL,
	route        INTEGER NOT NULL,
	sha256       BLOB    NOT NULL,
	envelope     TEXT    NOT NULL,
	diagnostics  TEXT
);

-- table journal_state
CREATE TABLE journal_state (
	id            INTEGER PRIMARY KEY CHECK (id = 1),
	high_seq      INTEGER NOT NULL,
	delivered_seq INTEGER NOT NULL DEFAULT 0
);

-- table journal_sweeps
CREATE TABLE journal_sweeps (
	listener  TEXT    NOT NULL,
	profile   TEXT    NOT NULL,
	swept_seq INTEGER NOT NULL DEFAULT 0 CHECK (swept_seq >= 0),
	PRIMARY KEY (listener, profile)
) WITHOUT ROWID;

-- table journal_tombstones
CREATE TABLE journal_tombstones (
	seq          INTEGER PRIMARY KEY,
	deleted_at   INTEGER NOT NULL,
	reason       TEXT    NOT NULL,
	time_ns      INTEGER,
	thread       TEXT,
	conversation TEXT,
	direction    TEXT,
	kind         TEXT,
	sender       TEXT,
	recipient    TEXT,
	listener     TEXT,
	root         TEXT,
	sha256       BLOB,
	profile      TEXT
);

-- table killed_conversations
CREATE TABLE killed_conversations (
	conversation TEXT    PRIMARY KEY CHECK (conversation <> ''),
	killed_at    INTEGER NOT NULL
) WITHOUT ROWID;

-- table llm_calls
CREATE TABLE llm_calls (
	id                INTEGER PRIMARY KEY,
	time_ns           INTEGER NOT NULL,
	conversation      TEXT    NOT NULL DEFAULT '',
	thread            TEXT    NOT NULL DEFAULT '',
	agent             TEXT    NOT NULL DEFAULT '',
	backend           TEXT    NOT NULL,
	model             TEXT    NOT NULL DEFAULT '',
	attempt           INTEGER NOT NULL DEFAULT 1,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	wait_ns           INTEGER NOT NULL DEFAULT 0,
	first_token_ns    INTEGER NOT NULL DEFAULT 0,
	duration_ns       INTEGER NOT NULL DEFAULT 0,
	streamed          INTEGER NOT NULL DEFAULT 0,
	finish_reason     TEXT    NOT NULL DEFAULT '',
	tool_calls        INTEGER NOT NULL DEFAULT 0,
	error             TEXT    NOT NULL DEFAULT '',
	envelope_seq      INTEGER,
	usage_estimated   INTEGER NOT NULL DEFAULT 0
);

-- table memory
CREATE TABLE memory (
	n            INTEGER PRIMARY KEY,
	id           TEXT    NOT NULL UNIQUE CHECK (id <> ''),
	user_id      TEXT    NOT NULL DEFAULT '',
	agent        TEXT    NOT NULL CHECK (agent <> ''),
	content      TEXT    NOT NULL CHECK (content <> ''),
	tags         TEXT    NOT NULL DEFAULT '',
	consent      TEXT    NOT NULL CHECK (consent <> ''),
	conversation TEXT    NOT NULL DEFAULT '',
	thread       TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL
);

-- table memory_fts
CREATE VIRTUAL TABLE memory_fts USING fts5(content, tags, content = 'memory', content_rowid = 'n',
	tokenize = 'unicode61 remove_diacritics 2');

-- table memory_fts_config
CREATE TABLE 'memory_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table memory_fts_data
CREATE TABLE 'memory_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table memory_fts_docsize
CREATE TABLE 'memory_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table memory_fts_idx
CREATE TABLE 'memory_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table oob_signatures
CREATE TABLE oob_signatures (
	signature  BLOB    PRIMARY KEY CHECK (length(signature) > 0),
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;

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
	in_reply_to  TEXT    NOT NULL DEFAULT '',
	seq          INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (thread, idx)
) WITHOUT ROWID;

-- table threads
CREATE TABLE threads (
	id         TEXT    PRIMARY KEY,
	parent     TEXT    NOT NULL DEFAULT '',
	path       TEXT    NOT NULL,
	created_ns INTEGER,
	touched_ns INTEGER,
	ref        TEXT    NOT NULL DEFAULT '',
	profile    TEXT    NOT NULL DEFAULT '',
	hops       INTEGER NOT NULL DEFAULT 0,
	marks      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- table users
CREATE TABLE users (
	name           TEXT    PRIMARY KEY,
	password_hash  TEXT    NOT NULL,
	role           TEXT    NOT NULL,
	totp_secret    TEXT    NOT NULL DEFAULT '',
	totp_last_step INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER,
	last_login     INTEGER,
	profile        TEXT    NOT NULL DEFAULT ''
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
) WITHOUT ROWID;

-- trigger journal_append_only
CREATE TRIGGER journal_append_only BEFORE UPDATE ON journal_rows
BEGIN
	SELECT RAISE(ABORT, 'journal is append-only');
END;

-- trigger journal_delete_needs_tombstone
CREATE TRIGGER journal_delete_needs_tombstone BEFORE DELETE ON journal_rows
WHEN NOT EXISTS (SELECT 1 FROM journal_tombstones WHERE seq = OLD.seq)
BEGIN
	SELECT RAISE(ABORT, 'journal rows are deleted only after a tombstone');
END;

-- trigger journal_names_immutable_delete
CREATE TRIGGER journal_names_immutable_delete BEFORE DELETE ON journal_names
BEGIN
	SELECT RAISE(ABORT, 'journal names are immutable');
END;

-- trigger journal_names_immutable_update
CREATE TRIGGER journal_names_immutable_update BEFORE UPDATE ON journal_names
BEGIN
	SELECT RAISE(ABORT, 'journal names are immutable');
END;

-- trigger journal_routes_immutable_delete
CREATE TRIGGER journal_routes_immutable_delete BEFORE DELETE ON journal_routes
BEGIN
	SELECT RAISE(ABORT, 'journal routes are immutable');
END;

-- trigger journal_routes_immutable_update
CREATE TRIGGER journal_routes_immutable_update BEFORE UPDATE ON journal_routes
BEGIN
	SELECT RAISE(ABORT, 'journal routes are immutable');
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

-- trigger killed_conversations_immutable_delete
CREATE TRIGGER killed_conversations_immutable_delete BEFORE DELETE ON killed_conversations
BEGIN
	SELECT RAISE(ABORT, 'killed conversations are immutable');
END;

-- trigger killed_conversations_immutable_update
CREATE TRIGGER killed_conversations_immutable_update BEFORE UPDATE ON killed_conversations
BEGIN
	SELECT RAISE(ABORT, 'killed conversations are immutable');
END;

-- trigger memory_fts_delete
CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory BEGIN
	INSERT INTO memory_fts (memory_fts, rowid, content, tags) VALUES ('delete', old.n, old.content, old.tags);
END;

-- trigger memory_fts_insert
CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory BEGIN
	INSERT INTO memory_fts (rowid, content, tags) VALUES (new.n, new.content, new.tags);
END;

-- trigger memory_immutable
CREATE TRIGGER memory_immutable BEFORE UPDATE ON memory BEGIN
	SELECT RAISE(ABORT, 'memory rows are never changed, only deleted');
END;

-- view journal
CREATE VIEW journal AS SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z' AS time,
	thread, conversation, direction, kind, sender, recipient, listener, root,
	CASE WHEN payload_at > 0 AND payload_end > payload_at
		THEN trim(substr(envelope, payload_at, payload_end - payload_at), ' ' || char(9, 10, 13))
		ELSE envelope END AS payload,
	diagnostics, envelope, time_ns, profile, NULL AS pruned
FROM (SELECT *,
		nullif(instr(envelope, meta_close), 0) + length(meta_close) AS payload_at,
		CASE WHEN length(root_close) > 3 AND substr(envelope, -length(root_close)) = root_close
			THEN length(envelope) - length(root_close) + 1 END AS payload_end
	FROM (SELECT *, '</' || root_name || '>' AS root_close,
			CASE WHEN substr(meta_tag, 1, 1) = '<' AND substr(meta_tag, 2, 1) NOT IN ('/', '?')
				THEN '</' || substr(meta_tag, 2, min(instr(meta_tag || ' ', ' '), instr(meta_tag || '>', '>')) - 2) || '>'
			END AS meta_close
		FROM (SELECT *,
				CASE WHEN substr(envelope, 1, 1) = '<' AND substr(envelope, 2, 1) NOT IN ('/', '?')
					THEN substr(envelope, 2, min(instr(envelope || ' ', ' '), instr(envelope || '>', '>')) - 2)
				END AS root_name,
				ltrim(substr(envelope, instr(envelope, '>') + 1, 256), ' ' || char(9, 10, 13)) AS meta_tag
			FROM journal_entries)))
UNION ALL SELECT seq,
	strftime('%Y-%m-%dT%H:%M:%S', time_ns / 1000000000, 'unixepoch') || '.' || printf('%09d', time_ns % 1000000000) || 'Z',
	thread, conversation, direction, kind, sender, recipient, listener, root,
	NULL, NULL, NULL, time_ns, profile,
	reason || ' at ' || strftime('%Y-%m-%dT%H:%M:%S', deleted_at / 1000000000, 'unixepoch') || 'Z'
FROM journal_tombstones;

-- view journal_entries
CREATE VIEW journal_entries AS SELECT r.seq, r.time_ns, r.thread, r.conversation,
	coalesce(ro.direction, '') AS direction, coalesce(ro.kind, '') AS kind, coalesce(s.name, '') AS sender,
	coalesce(t.name, '') AS recipient, coalesce(l.name, '') AS listener, coalesce(o.name, '') AS root, r.sha256,
	r.envelope, coalesce(r.diagnostics, '') AS diagnostics, p.name AS profile
FROM journal_rows AS r
	LEFT JOIN journal_routes AS ro ON ro.id = r.route
	LEFT JOIN journal_names AS s ON s.id = ro.sender
	LEFT JOIN journal_names AS t ON t.id = ro.recipient
	LEFT JOIN journal_names AS l ON l.id = ro.listener
	LEFT JOIN journal_names AS o ON o.id = ro.root
	LEFT JOIN journal_names AS p ON p.id = ro.profile;

