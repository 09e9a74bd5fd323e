package federation

// schema is the federation state's tables, kept in the organism's store
// (registry/store's AddSchema; federation_ names them apart from the
// store's own) or in memory. federation_outbox holds every gateway's
// envelopes not yet acknowledged by the peer, in the order they are sent
// (seq); federation_calls the calls this side made and waits on (so a
// re-delivered message adopts its call after a restart), with the answer
// that came while nobody waited; federation_seen the hashes of the
// envelopes received (not calls), kept for the retention;
// federation_received the conversations begun for the peer's calls, done
// once the journal holds the call, and federation_received_since when that
// table began holding every call received (0 for a state that always had
// it); federation_served the conversations serving the peer's calls, so
// their answers still reach the peer after a restart; federation_imports
// the capabilities learnt from each peer; federation_epoch a random id
// drawn when the state was created, which names this state's calls apart
// from those of a state created before it with the same key (callid.go);
// federation_migrated when the rows
// of a federation.db (the state file of earlier versions) were moved here
// (migrate.go).
//
// Every page a commit changes is written to the WAL whole (16 KiB in the
// store), so the tables are shaped for few pages per commit: the outbox's
// seq is assigned by the process (db.nextSeq) and its rows are deleted by
// it, with no index beside it; calls and served (rows in flight only:
// small) are WITHOUT ROWID on their keys, and calls has no index for the
// lookup by caller, which only a restart makes (openCalls scans). Only
// seen and received grow with the traffic. A seen row's hash column holds
// the envelope's sent time before its hash (seenKey), so its inserts
// append, and the sweep and the load of recent rows (recent.go) read a
// range of keys: seen has no index beside its key (an index on at cost a
// commit of the caller one more page, 0.6 of its 8.6). Rows of earlier
// versions hold the hash alone; federation_seen_legacy has a row while
// some may be left (a state that had the at index and some rows when it
// was dropped, or rows moved from a federation.db), which the sweep and
// the load then scan for, and the sweep deletes once they are gone.
// received's at index serves its sweep and load (appends to its last
// page).
//
//	sqlite3 -readonly data/xmlpipe.db "SELECT gateway, id, created FROM federation_outbox ORDER BY seq"
const schema = `
CREATE TABLE IF NOT EXISTS federation_outbox (
	seq INTEGER PRIMARY KEY,
	gateway TEXT NOT NULL,
	id TEXT NOT NULL,
	env BLOB NOT NULL,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS federation_seen (
	hash BLOB PRIMARY KEY,
	at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS federation_seen_legacy (at INTEGER NOT NULL);
INSERT INTO federation_seen_legacy (at) SELECT 0
	WHERE EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = 'federation_seen_at')
	AND EXISTS (SELECT 1 FROM federation_seen) AND NOT EXISTS (SELECT 1 FROM federation_seen_legacy);
DROP INDEX IF EXISTS federation_seen_at;
CREATE TABLE IF NOT EXISTS federation_served (
	conv TEXT PRIMARY KEY,
	gateway TEXT NOT NULL,
	link_thread TEXT NOT NULL,
	created INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS federation_calls (
	link_thread TEXT PRIMARY KEY,
	gateway TEXT NOT NULL,
	caller_thread TEXT NOT NULL,
	digest BLOB NOT NULL,
	answer BLOB,
	created INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS federation_imports (
	gateway TEXT NOT NULL,
	tag TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	xsd BLOB NOT NULL,
	PRIMARY KEY (gateway, tag)
);
CREATE TABLE IF NOT EXISTS federation_received (
	conv TEXT PRIMARY KEY,
	at INTEGER NOT NULL,
	done INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS federation_received_at ON federation_received(at);
CREATE TABLE IF NOT EXISTS federation_received_since (at INTEGER NOT NULL);
INSERT INTO federation_received_since (at) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM federation_received_since);
CREATE TABLE IF NOT EXISTS federation_epoch (id BLOB NOT NULL);
INSERT INTO federation_epoch (id) SELECT randomblob(16) WHERE NOT EXISTS (SELECT 1 FROM federation_epoch);
CREATE TABLE IF NOT EXISTS federation_migrated (
	at INTEGER NOT NULL,
	file TEXT NOT NULL
);`
