package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/klauspost/compress/s2"
)

// The legacy layout is the store's layout before the journal was one row
// per envelope: schema versions 8 to 13 of a schema_version table, with
// the journal in journal_segments, one row per run of entries committed
// together, their columns and bytes S2-compressed. Every other table of it
// (tombstones, journal state, delivery marks, sweep cursors, lookup keys,
// kernel state, users, sessions, OOB signatures, LLM calls, approvals,
// memory) has the columns of the current layout and is kept as it is,
// except that versions before 12 lack the correlation refs of threads and
// slots (legacyCorrelationRefs); versions before 13 get the memory tables
// from the schema. Versions before 8 lived for hours on a development
// branch and are not migrated.

// minLegacyVersion is the oldest legacy schema version Open migrates.
const minLegacyVersion = 8

// legacySupported reports a legacy schema version Open cannot migrate (0:
// not legacy).
func legacySupported(version int) error {
	if version == 0 || version >= minLegacyVersion {
		return nil
	}
	return fmt.Errorf("store: the database is of a development layout (schema %d) that this binary cannot "+
		"migrate; move the data directory away to start afresh", version)
}

// migrateLegacy moves the journal of a legacy database into the journal
// table, inside tx, after the current schema was applied: each segment is
// decoded and its entries inserted unchanged (seq, time, columns, bytes and
// stored SHA-256), then journal_segments and schema_version are dropped. A
// segment that does not decode fails the migration, leaving the database
// as it was, rather than lose its entries. version is the legacy schema
// version.
func migrateLegacy(ctx context.Context, tx *sql.Tx, version int) error {
	if version < legacyCorrelationVersion {
		if _, err := tx.ExecContext(ctx, legacyCorrelationRefs); err != nil {
			return fmt.Errorf("store: migrate the legacy layout: correlation refs: %w", err)
		}
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO journal_rows (`+rowColumnsV4+`) VALUES (?, ?, ?, ?, ?, ?,
		`+nameIDOf("?")+`, `+nameIDOf("?")+`, `+nameIDOf("?")+`, `+nameIDOf("?")+`, ?, ?, ?, NULL)`)
	if err != nil {
		return fmt.Errorf("store: migrate the legacy journal: %w", err)
	}
	defer ins.Close()
	names, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO journal_names (name) VALUES (?), (?), (?), (?)`)
	if err != nil {
		return fmt.Errorf("store: migrate the legacy journal: %w", err)
	}
	defer names.Close()
	after := int64(0)
	for {
		page, err := legacySegments(ctx, tx, after)
		if err != nil {
			return err
		}
		for _, s := range page {
			for i := range s.entries {
				e := &s.entries[i]
				if _, err := names.ExecContext(ctx, e.From, e.To, e.Listener, e.PayloadTag); err != nil {
					return fmt.Errorf("store: migrate the legacy journal: seq %d: %w", e.Seq, err)
				}
				if _, err := ins.ExecContext(ctx, e.Seq, e.Time.UnixNano(), e.Thread, e.Conversation, e.Direction.String(),
					e.Kind.String(), e.From, e.To, e.Listener, e.PayloadTag, e.SHA256[:], string(e.Bytes),
					e.Diagnostics); err != nil {
					return fmt.Errorf("store: migrate the legacy journal: seq %d: %w", e.Seq, err)
				}
			}
			after = s.first
		}
		if len(page) < legacyPage {
			break
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE journal_segments; DROP TABLE schema_version`); err != nil {
		return fmt.Errorf("store: migrate the legacy journal: %w", err)
	}
	return nil
}

// legacyCorrelationVersion is the legacy schema version that added the
// correlation refs: the ref a thread was opened with and the ref a slot's
// message answers.
const legacyCorrelationVersion = 12

// legacyCorrelationRefs adds the correlation refs to the kernel state of a
// legacy database older than legacyCorrelationVersion; the columns land
// where a fresh store has them (last).
const legacyCorrelationRefs = `
ALTER TABLE threads ADD COLUMN ref TEXT NOT NULL DEFAULT '';
ALTER TABLE slots ADD COLUMN in_reply_to TEXT NOT NULL DEFAULT '';
`

// legacyPage is how many segments migrateLegacy reads per query.
const legacyPage = 64

// legacySegments reads and decodes the next page of segments after the
// segment keyed after.
func legacySegments(ctx context.Context, tx *sql.Tx, after int64) ([]*legacySegment, error) {
	rows, err := tx.QueryContext(ctx, `SELECT first_seq, last_seq, entries, codec, data FROM journal_segments
		WHERE first_seq > ? ORDER BY first_seq LIMIT ?`, after, legacyPage)
	if err != nil {
		return nil, fmt.Errorf("store: migrate the legacy journal: %w", err)
	}
	defer rows.Close()
	var out []*legacySegment
	for rows.Next() {
		var (
			first, last, n, codec int64
			data                  []byte
		)
		if err := rows.Scan(&first, &last, &n, &codec, &data); err != nil {
			return nil, fmt.Errorf("store: migrate the legacy journal: %w", err)
		}
		s, err := decodeSegment(first, last, n, codec, data)
		if err != nil {
			return nil, fmt.Errorf("store: migrate the legacy journal: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: migrate the legacy journal: %w", err)
	}
	return out, nil
}

// segmentCodecS2 is the only legacy segment codec: the encoded segment as
// one S2 block.
const segmentCodecS2 = 2

// segmentMaxDecoded bounds what decodeSegment allocates for a (corrupt)
// segment claiming a larger size.
const segmentMaxDecoded = 64 << 20

// segmentStrings is the number of text fields an encoded entry carries.
const segmentStrings = 7

// errCorruptSegment reports a legacy journal segment that does not decode.
var errCorruptSegment = errors.New("corrupt journal segment")

// legacySegment is a decoded legacy segment: its key and the entries it
// holds, in seq order.
type legacySegment struct {
	first   int64
	entries []Entry
}

// decodeSegment decodes the segment stored under key first, covering seqs
// first..last, holding count entries, in codec codec. The uncompressed form
// is: uvarint count; per entry, uvarint seq − first, zigzag varint time −
// the previous entry's time, one byte direction<<4 | kind, seven texts
// (thread, conversation, from, to, listener, payload tag, diagnostics) each
// as uvarint length and bytes, the 32-byte SHA-256 and the uvarint length
// of the bytes; then the bytes of every entry, concatenated. It rejects a
// range that is empty or starts below 1, an unknown codec, a bad block, a
// count that differs, seqs out of order or out of range, empty bytes and
// lengths that do not add up.
func decodeSegment(first, last, count, codec int64, data []byte) (*legacySegment, error) {
	bad := func(what string) error { return fmt.Errorf("%w %d: %s", errCorruptSegment, first, what) }
	if first < 1 || last < first {
		return nil, bad(fmt.Sprintf("bad range %d..%d", first, last))
	}
	if codec != segmentCodecS2 {
		return nil, bad(fmt.Sprintf("unknown codec %d", codec))
	}
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, fmt.Errorf("%w %d: %w", errCorruptSegment, first, err)
	}
	if n > segmentMaxDecoded {
		return nil, bad(fmt.Sprintf("claims %d bytes", n))
	}
	raw, err := s2.Decode(make([]byte, n), data)
	if err != nil {
		return nil, fmt.Errorf("%w %d: %w", errCorruptSegment, first, err)
	}
	d := segmentDecoder{raw: raw}
	stored := d.uvarint()
	// Every entry takes at least 43 header bytes and one body byte.
	if d.err != nil || stored == 0 || stored != uint64(count) || stored > uint64(len(raw))/44 {
		return nil, bad("bad entry count")
	}
	s := &legacySegment{first: first, entries: make([]Entry, stored)}
	lens := make([]int, stored)
	var prev int64
	for i := range s.entries {
		e := &s.entries[i]
		delta := d.uvarint()
		if d.err != nil || delta > uint64(last-first) {
			return nil, bad("seq out of range")
		}
		e.Seq = first + int64(delta)
		if i > 0 && e.Seq <= s.entries[i-1].Seq {
			return nil, bad("seqs out of order")
		}
		prev += d.varint()
		e.Time = time.Unix(0, prev).UTC()
		dk := d.byte()
		e.Direction, e.Kind = Direction(dk>>4), Kind(dk&0x0f)
		var texts [segmentStrings]string
		for j := range texts {
			l := d.uvarint()
			if d.err != nil || l > uint64(len(d.raw)-d.off) {
				return nil, bad("bad text length")
			}
			texts[j] = string(d.take(int(l)))
		}
		e.Thread, e.Conversation, e.From, e.To, e.Listener, e.PayloadTag, e.Diagnostics =
			texts[0], texts[1], texts[2], texts[3], texts[4], texts[5], texts[6]
		copy(e.SHA256[:], d.take(32))
		l := d.uvarint()
		if d.err != nil || l == 0 || l > uint64(len(d.raw)) {
			return nil, bad("bad body length")
		}
		lens[i] = int(l)
	}
	if d.err != nil {
		return nil, bad("truncated header")
	}
	body := raw[d.off:]
	total := 0
	for _, l := range lens {
		total += l
	}
	if total != len(body) {
		return nil, bad("body lengths do not match the data")
	}
	for i, l := range lens {
		s.entries[i].Bytes = body[:l:l]
		body = body[l:]
	}
	return s, nil
}

// segmentDecoder reads the header of a decoded segment; the first failure
// sticks in err.
type segmentDecoder struct {
	raw []byte
	off int
	err error
}

// uvarint reads an unsigned varint.
func (d *segmentDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.raw[d.off:])
	if k <= 0 {
		d.err = errors.New("truncated")
		return 0
	}
	d.off += k
	return v
}

// varint reads a zigzag varint (binary.AppendVarint's encoding).
func (d *segmentDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// byte reads one byte.
func (d *segmentDecoder) byte() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// take reads n bytes.
func (d *segmentDecoder) take(n int) []byte {
	if d.err != nil || len(d.raw)-d.off < n {
		d.err = errors.New("truncated")
		return nil
	}
	b := d.raw[d.off : d.off+n]
	d.off += n
	return b
}
