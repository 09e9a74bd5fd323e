package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// journalPacksV7 (migration 7, superseded by the segments of migration 8,
// journal_segments.go) rebuilds the journal with nullable bytes
// and a pack column, then creates the journal packs. The packs table comes
// last: renaming the journal would repoint its trigger at the old table.
//
// Journal packs hold the canonical bytes of journal entries
// compressed together. A commit's appends are grouped by listener and by
// whether they are messages; each group of two or more entries becomes one
// pack (split at 64 KiB), and its journal rows keep every column
// but the bytes, which they reference by the pack's key: the seq of its
// first entry. Single entries keep their bytes inline.
//
// Why: every byte SQLite journals is written twice, to the WAL and again by
// the checkpoint into the database file. Under `xmlpipe bench --journal`
// those two writes cost ~2.7 µs of the ~9 µs each journaled envelope costs
// the writer (BenchmarkJournalFlow/lagging: 9.2 cpu-µs per envelope with
// 520-byte bodies, 6.5 with bodies of 53 bytes). A commit's envelopes share
// namespaces, element names and much of their text, so S2 compresses a
// group 8× at ~2.7 GB/s (0.15 µs per envelope), where compressing each
// envelope alone gains 1.4×.
//
// Retention deleted rows, never packs in part: a pack was deleted with the
// last row that referenced it, and a trigger
// refuses to delete a pack a row still references. Grouping by listener
// keeps a pack's entries under one retention policy; keeping messages apart
// from other kinds keeps prune_on_delivery (which deletes delivered
// messages and keeps the rest) from pinning a pack forever.
var journalPacksV7 = `
ALTER TABLE journal RENAME TO journal_v6;
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
INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind, from_name, to_name, listener,
	payload_tag, sha256, bytes, diagnostics)
SELECT seq, time_ns, thread, conversation, direction, kind, from_name, to_name, listener,
	payload_tag, sha256, bytes, diagnostics FROM journal_v6 ORDER BY seq;
DROP TABLE journal_v6;
CREATE TRIGGER journal_append_only BEFORE UPDATE ON journal
BEGIN
	SELECT RAISE(ABORT, 'journal is append-only');
END;
CREATE TRIGGER journal_delete_needs_tombstone BEFORE DELETE ON journal
WHEN NOT EXISTS (SELECT 1 FROM journal_tombstones WHERE seq = OLD.seq)
BEGIN
	SELECT RAISE(ABORT, 'journal rows are deleted only after a tombstone');
END;
CREATE TABLE journal_packs (
	first_seq INTEGER PRIMARY KEY,
	last_seq  INTEGER NOT NULL CHECK (last_seq > first_seq),
	codec     INTEGER NOT NULL CHECK (codec = 1),
	data      BLOB    NOT NULL CHECK (length(data) > 0)
);
CREATE TRIGGER journal_packs_immutable BEFORE UPDATE ON journal_packs
BEGIN
	SELECT RAISE(ABORT, 'journal packs are immutable');
END;
CREATE TRIGGER journal_packs_delete_unreferenced BEFORE DELETE ON journal_packs
WHEN EXISTS (SELECT 1 FROM journal WHERE seq BETWEEN OLD.first_seq AND OLD.last_seq AND pack = OLD.first_seq)
BEGIN
	SELECT RAISE(ABORT, 'journal packs are deleted only after their rows');
END;
`

// packCodecS2 is the only pack codec: the encoded pack (encodePack) as one
// S2 block.
const packCodecS2 = 1

// packMaxDecoded bounds what decodePack allocates for a (corrupt) pack
// claiming a larger size.
const packMaxDecoded = 64 << 20

// errCorruptPack reports a journal pack that does not decode.
var errCorruptPack = errors.New("corrupt journal pack")

// decodedPack is a decoded journal pack: the bodies of its entries by seq.
type decodedPack struct {
	seqs   []int64
	bodies [][]byte
}

// body returns the canonical bytes of entry seq, or false if the pack does
// not hold it.
func (p *decodedPack) body(seq int64) ([]byte, bool) {
	lo, hi := 0, len(p.seqs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.seqs[m] < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(p.seqs) && p.seqs[lo] == seq {
		return p.bodies[lo], true
	}
	return nil, false
}

// decodePack decodes the pack stored under key first with codec codec. It
// rejects anything encodePack would not produce: an unknown codec, a bad
// block, seqs out of order or not starting at first, empty bodies, and
// lengths that do not add up. The bodies share one buffer.
func decodePack(first int64, codec int64, data []byte) (*decodedPack, error) {
	if codec != packCodecS2 {
		return nil, fmt.Errorf("%w %d: unknown codec %d", errCorruptPack, first, codec)
	}
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, fmt.Errorf("%w %d: %w", errCorruptPack, first, err)
	}
	if n > packMaxDecoded {
		return nil, fmt.Errorf("%w %d: claims %d bytes", errCorruptPack, first, n)
	}
	raw, err := s2.Decode(make([]byte, n), data)
	if err != nil {
		return nil, fmt.Errorf("%w %d: %w", errCorruptPack, first, err)
	}
	bad := func(what string) error { return fmt.Errorf("%w %d: %s", errCorruptPack, first, what) }
	count, k := binary.Uvarint(raw)
	// Every entry takes at least two header bytes and one body byte.
	if k <= 0 || count < 2 || count > uint64(len(raw))/3 {
		return nil, bad("bad entry count")
	}
	raw = raw[k:]
	p := &decodedPack{seqs: make([]int64, count), bodies: make([][]byte, count)}
	lens := make([]uint64, count)
	var total uint64
	for i := range p.seqs {
		delta, k := binary.Uvarint(raw)
		if k <= 0 || delta > 1<<40 {
			return nil, bad("bad seq")
		}
		raw = raw[k:]
		length, k := binary.Uvarint(raw)
		if k <= 0 || length == 0 || length > uint64(len(raw)) {
			return nil, bad("bad body length")
		}
		raw = raw[k:]
		p.seqs[i] = first + int64(delta)
		if (i == 0) != (delta == 0) || (i > 0 && p.seqs[i] <= p.seqs[i-1]) {
			return nil, bad("seqs out of order")
		}
		lens[i] = length
		total += length
	}
	if total != uint64(len(raw)) {
		return nil, bad("body lengths do not match the data")
	}
	for i, l := range lens {
		p.bodies[i] = raw[:l:l]
		raw = raw[l:]
	}
	return p, nil
}
