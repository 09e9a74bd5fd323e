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
// together, their columns and bytes S2-compressed. Open migrates it once,
// straight into the current layout, in the one transaction of
// prepareSchema (a failure leaves the database as it was):
//
//   - prepareLegacy, before the schema is applied, gives
//     journal_tombstones the columns of a pruned entry's metadata (NULL in
//     the legacy tombstones, which kept only the seq), users their
//     security profile ("") and sets the kernel tables aside
//     (kernel_layout.go);
//   - migrateLegacy, after it, moves every segment's entries into
//     journal_rows with their routes and names (profile NULL: not
//     recorded), the retention sweep's cursors from journal_listeners to
//     journal_sweeps (profile ""), copies the kernel rows into their
//     WITHOUT ROWID tables and drops what is left of the legacy layout.
//
// Every other table of it (journal state, delivery marks, lookup keys,
// sessions, OOB signatures, LLM calls, approvals, memory) has the columns
// of the current layout and is kept as it is; the tables a version lacks
// come from the schema. Versions before 8 lived for hours on a
// development branch and are refused (layoutError).

// minLegacyVersion is the oldest legacy schema version Open migrates.
const minLegacyVersion = 8

// legacyTombstoneMetadata are the columns of journal_tombstones that a
// legacy database lacks: a pruned entry's metadata, NULL in the legacy
// tombstones (Pruned.NoMetadata).
var legacyTombstoneMetadata = []struct{ column, decl string }{
	{"time_ns", "INTEGER"}, {"thread", "TEXT"}, {"conversation", "TEXT"}, {"direction", "TEXT"}, {"kind", "TEXT"},
	{"sender", "TEXT"}, {"recipient", "TEXT"}, {"listener", "TEXT"}, {"root", "TEXT"}, {"sha256", "BLOB"},
	{"profile", "TEXT"},
}

// legacyColumns are the columns a legacy database's tables lack, with
// their declarations: each lands where a fresh store has it (last).
var legacyColumns = []struct{ table, column, decl string }{
	{"users", "profile", "TEXT NOT NULL DEFAULT ''"},
}

// prepareLegacy readies a legacy database, inside tx, for the current
// schema: it adds the columns the legacy tables lack (the tombstones'
// metadata, the users' profile) and sets the kernel tables aside for
// migrateLegacy to copy into the tables the schema creates.
func prepareLegacy(ctx context.Context, tx *sql.Tx) error {
	add := func(table, column, decl string) error {
		ok, err := hasColumn(ctx, tx, table, column)
		if err != nil || ok {
			return err
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+table+` ADD COLUMN `+column+` `+decl); err != nil {
			return fmt.Errorf("store: migrate the legacy layout: add %s.%s: %w", table, column, err)
		}
		return nil
	}
	for _, c := range legacyTombstoneMetadata {
		if err := add("journal_tombstones", c.column, c.decl); err != nil {
			return err
		}
	}
	for _, c := range legacyColumns {
		if err := add(c.table, c.column, c.decl); err != nil {
			return err
		}
	}
	return setLegacyKernelAside(ctx, tx)
}

// migrateLegacy moves a legacy database, inside tx, after prepareLegacy
// and the schema, into the current layout: the journal's entries
// (migrateLegacyJournal), the sweep cursors and the kernel state; then it
// drops journal_segments and schema_version.
func migrateLegacy(ctx context.Context, tx *sql.Tx) error {
	if err := migrateLegacyJournal(ctx, tx); err != nil {
		return err
	}
	var listeners int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'journal_listeners'`).
		Scan(&listeners); err != nil {
		return fmt.Errorf("store: migrate the legacy sweep cursors: %w", err)
	}
	if listeners > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO journal_sweeps (listener, profile, swept_seq)
			SELECT listener, '', swept_seq FROM journal_listeners; DROP TABLE journal_listeners`); err != nil {
			return fmt.Errorf("store: migrate the legacy sweep cursors: %w", err)
		}
	}
	if err := copyLegacyKernel(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE journal_segments; DROP TABLE schema_version`); err != nil {
		return fmt.Errorf("store: migrate the legacy layout: %w", err)
	}
	return nil
}

// legacyRoute is the route of a legacy entry: its direction, kind and
// names (its profile was not recorded).
type legacyRoute struct{ direction, kind, sender, recipient, listener, root string }

// migrateLegacyJournal moves the entries of every legacy segment into
// journal_rows, inside tx, unchanged (seq, time, columns, bytes and stored
// SHA-256), entering each name into journal_names and each route into
// journal_routes (profile NULL) once. A segment that does not decode fails
// the migration rather than lose its entries.
func migrateLegacyJournal(ctx context.Context, tx *sql.Tx) error {
	fail := func(err error) error { return fmt.Errorf("store: migrate the legacy journal: %w", err) }
	insName, err := tx.PrepareContext(ctx, `INSERT INTO journal_names (id, name) VALUES (?, ?)`)
	if err != nil {
		return fail(err)
	}
	defer insName.Close()
	insRoute, err := tx.PrepareContext(ctx, `INSERT INTO journal_routes (id, direction, kind, sender, recipient,
		listener, root, profile) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`)
	if err != nil {
		return fail(err)
	}
	defer insRoute.Close()
	insRow, err := tx.PrepareContext(ctx, `INSERT INTO journal_rows (seq, time_ns, thread, conversation, route, sha256,
		envelope, diagnostics) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fail(err)
	}
	defer insRow.Close()
	// The schema has just created journal_names (holding the empty name,
	// id 0) and journal_routes: the ids go on from there.
	names := map[string]int64{"": 0}
	routes := map[legacyRoute]int64{}
	nameID := func(name string) (int64, error) {
		if id, ok := names[name]; ok {
			return id, nil
		}
		id := int64(len(names))
		if _, err := insName.ExecContext(ctx, id, name); err != nil {
			return 0, err
		}
		names[name] = id
		return id, nil
	}
	routeID := func(e *Entry) (int64, error) {
		k := legacyRoute{e.Direction.String(), e.Kind.String(), e.From, e.To, e.Listener, e.PayloadTag}
		if id, ok := routes[k]; ok {
			return id, nil
		}
		id := int64(len(routes) + 1)
		args := []any{id, k.direction, k.kind}
		for _, n := range [...]string{k.sender, k.recipient, k.listener, k.root} {
			name, err := nameID(n)
			if err != nil {
				return 0, err
			}
			args = append(args, name)
		}
		if _, err := insRoute.ExecContext(ctx, args...); err != nil {
			return 0, err
		}
		routes[k] = id
		return id, nil
	}
	after := int64(0)
	for {
		page, err := legacySegments(ctx, tx, after)
		if err != nil {
			return err
		}
		for _, s := range page {
			for i := range s.entries {
				e := &s.entries[i]
				route, err := routeID(e)
				if err != nil {
					return fail(fmt.Errorf("seq %d: %w", e.Seq, err))
				}
				var diagnostics any
				if e.Diagnostics != "" {
					diagnostics = e.Diagnostics
				}
				if _, err := insRow.ExecContext(ctx, e.Seq, e.Time.UnixNano(), e.Thread, e.Conversation, route,
					e.SHA256[:], string(e.Bytes), diagnostics); err != nil {
					return fail(fmt.Errorf("seq %d: %w", e.Seq, err))
				}
			}
			after = s.first
		}
		if len(page) < legacyPage {
			return nil
		}
	}
}

// legacyPage is how many segments migrateLegacy reads per query.
const legacyPage = 64

// legacySegments reads and decodes the next page of segments after the
// segment keyed after.
func legacySegments(ctx context.Context, tx *sql.Tx, after int64) ([]*legacySegment, error) {
	out, err := scanRows(ctx, tx, `SELECT first_seq, last_seq, entries, codec, data FROM journal_segments
		WHERE first_seq > ? ORDER BY first_seq LIMIT ?`, []any{after, legacyPage}, func(rows *sql.Rows) (*legacySegment, error) {
		var (
			first, last, n, codec int64
			data                  []byte
		)
		if err := rows.Scan(&first, &last, &n, &codec, &data); err != nil {
			return nil, err
		}
		return decodeSegment(first, last, n, codec, data)
	})
	if err != nil {
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
