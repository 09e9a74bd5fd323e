package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// FaultKind classifies a Verify finding.
type FaultKind string

// The kinds of fault Verify reports.
const (
	// FaultGap is a run of sequence numbers with neither a row nor a
	// tombstone: lost entries.
	FaultGap FaultKind = "gap"
	// FaultHash is a row whose SHA-256 does not match its bytes.
	FaultHash FaultKind = "hash"
	// FaultMissingField is a row lacking a required field.
	FaultMissingField FaultKind = "missing-field"
	// FaultTombstoned is a row whose seq also has a tombstone.
	FaultTombstoned FaultKind = "tombstoned-row"
	// FaultHighWater is a high-water mark that disagrees with the rows.
	FaultHighWater FaultKind = "high-water"
	// FaultIntegrity is a SQLite integrity-check finding.
	FaultIntegrity FaultKind = "integrity"
	// FaultLookupKey is a row of a summarised partition missing from the
	// lookup keys of its thread or conversation (journal_keys.go): lookups
	// by that id would not find it.
	FaultLookupKey FaultKind = "lookup-key"
)

// Fault is one problem found by Verify.
type Fault struct {
	// Kind classifies the fault.
	Kind FaultKind
	// Seq is the affected sequence number (the first one of a gap; 0 when
	// not about a row).
	Seq int64
	// Detail explains the fault.
	Detail string
}

// String formats the fault for logs and CLIs.
func (f Fault) String() string {
	return fmt.Sprintf("%s at seq %d: %s", f.Kind, f.Seq, f.Detail)
}

// Report is the outcome of Verify.
type Report struct {
	// Rows is the number of journal entries checked.
	Rows int64
	// Tombstones is the number of tombstones seen.
	Tombstones int64
	// HighSeq is the highest sequence number ever assigned.
	HighSeq int64
	// Faults lists every problem found, in seq order.
	Faults []Fault
}

// OK reports whether Verify found no fault.
func (r Report) OK() bool { return len(r.Faults) == 0 }

// progressEvery is how many entries Verify checks between progress calls.
const progressEvery = 1024

// Verify checks the committed journal in one read snapshot: every sequence
// number from 1 to the high-water mark is either an entry or a tombstone
// (never both), every entry's SHA-256 matches its bytes, no entry lacks a
// required field, the delivery watermark is not above the high-water mark,
// every entry of a partition with lookup keys is in them (journal_keys.go),
// and SQLite's quick_check passes. progress, when not nil, is called with
// (done, total) as entries and tombstones are checked. The error is for
// failures to read; findings are in the Report.
func (r *Reader) Verify(ctx context.Context, progress func(done, total int64)) (Report, error) {
	var rep Report
	err := r.read(func(db *sql.DB) error {
		var err error
		rep, err = verify(ctx, db, progress)
		return err
	})
	return rep, err
}

// verifier is the state of one Verify pass.
type verifier struct {
	ctx      context.Context
	tx       *sql.Tx
	rep      *Report
	progress func(done, total int64)
	total    int64
	done     int64
	// expect is the next seq the pass expects.
	expect int64
	// tombs holds the next tombstones, from tomb on; tombsAfter is where
	// the next page of them starts.
	tombs      []int64
	tomb       int
	tombsAfter int64
	tombsDone  bool
	// keysEnd is the first seq after the partitions with lookup keys;
	// part and recs the partition whose keys were read last.
	keysEnd int64
	part    int64
	recs    map[uint64]bool
}

// verifyPage is how many journal rows Verify reads per query.
const verifyPage = 1024

// verify is Verify on db.
func verify(ctx context.Context, db *sql.DB, progress func(done, total int64)) (Report, error) {
	var rep Report
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return rep, fmt.Errorf("store: verify: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	var delivered int64
	v := &verifier{ctx: ctx, tx: tx, rep: &rep, progress: progress, expect: 1, part: -1}
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM journal_rows), (SELECT count(*) FROM journal_tombstones),
		(SELECT high_seq FROM journal_state WHERE id = 1), `+watermarkExpr+`,
		(SELECT coalesce(max(part) + 1, 0) FROM journal_keys)`).
		Scan(&rep.Rows, &rep.Tombstones, &rep.HighSeq, &delivered, &v.keysEnd); err != nil {
		return rep, fmt.Errorf("store: verify: count: %w", err)
	}
	v.keysEnd <<= journalPartitionBits
	v.total = rep.Rows + rep.Tombstones
	if delivered > rep.HighSeq {
		rep.Faults = append(rep.Faults, Fault{Kind: FaultHighWater, Seq: delivered,
			Detail: fmt.Sprintf("delivery watermark %d exceeds the high-water mark %d", delivered, rep.HighSeq)})
	}
	for after := int64(0); ; {
		var page []Entry
		err := eachEntry(ctx, tx, `SELECT `+entryColumns+` FROM journal_entries WHERE seq > ? ORDER BY seq LIMIT ?`,
			[]any{after, verifyPage}, func(e *Entry) error {
				page = append(page, *e)
				return nil
			})
		if err != nil {
			return rep, fmt.Errorf("store: verify: %w", err)
		}
		for i := range page {
			if err := v.entry(&page[i]); err != nil {
				return rep, err
			}
		}
		if len(page) < verifyPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if err := v.tombstonesUpTo(math.MaxInt64); err != nil {
		return rep, err
	}
	switch last := v.expect - 1; {
	case last < rep.HighSeq:
		rep.Faults = append(rep.Faults, gapFault(v.expect, rep.HighSeq))
	case last > rep.HighSeq:
		rep.Faults = append(rep.Faults, Fault{Kind: FaultHighWater, Seq: last,
			Detail: fmt.Sprintf("seq %d exceeds the high-water mark %d", last, rep.HighSeq)})
	}
	if progress != nil {
		progress(v.done, v.total)
	}
	if err := v.names(); err != nil {
		return rep, err
	}
	slices.SortStableFunc(rep.Faults, func(a, b Fault) int { return cmp.Compare(a.Seq, b.Seq) })
	faults, err := quickCheck(ctx, tx)
	if err != nil {
		return rep, err
	}
	rep.Faults = append(rep.Faults, faults...)
	return rep, nil
}

// maxNameFaults bounds the rows names reports.
const maxNameFaults = 1000

// names reports the rows whose route journal_routes lacks, or whose
// route has a name id that journal_names lacks (the entries read such a
// route's direction, kind or name as ""): up to maxNameFaults of them.
func (v *verifier) names() error {
	missing := func(col string) string {
		return `NOT EXISTS (SELECT 1 FROM journal_names WHERE id = ro.` + col + `)`
	}
	seqs, err := scanRows(v.ctx, v.tx, `SELECT seq FROM journal_rows AS r WHERE r.route NOT IN (SELECT id FROM journal_routes)
		OR r.route IN (SELECT id FROM journal_routes AS ro WHERE `+missing("sender")+` OR `+missing("recipient")+` OR `+
		missing("listener")+` OR `+missing("root")+` OR (ro.profile IS NOT NULL AND `+missing("profile")+`))
		ORDER BY seq LIMIT ?`, []any{maxNameFaults}, scanInt64)
	if err != nil {
		return fmt.Errorf("store: verify: names: %w", err)
	}
	for _, seq := range seqs {
		v.fault(FaultMissingField, seq, "the route of the entry or one of its names is missing (journal_routes, journal_names)")
	}
	return nil
}

// entry checks one entry, after the tombstones below it.
func (v *verifier) entry(e *Entry) error {
	if err := v.tombstonesUpTo(e.Seq - 1); err != nil {
		return err
	}
	if e.Seq > v.expect {
		v.rep.Faults = append(v.rep.Faults, gapFault(v.expect, e.Seq-1))
	}
	if v.tomb < len(v.tombs) && v.tombs[v.tomb] == e.Seq {
		v.fault(FaultTombstoned, e.Seq, "the entry is present although a tombstone records its deletion")
	}
	v.expect = max(v.expect, e.Seq+1)
	v.rep.Faults = append(v.rep.Faults, checkEntry(e)...)
	if e.Seq < v.keysEnd {
		if err := v.lookupKeys(e); err != nil {
			return err
		}
	}
	return v.tick()
}

// tombstonesUpTo consumes the tombstones up to seq, checking continuity.
func (v *verifier) tombstonesUpTo(seq int64) error {
	for {
		if v.tomb == len(v.tombs) {
			if v.tombsDone {
				return nil
			}
			if err := v.nextTombstones(); err != nil {
				return err
			}
			continue
		}
		t := v.tombs[v.tomb]
		if t > seq {
			return nil
		}
		v.tomb++
		if t > v.expect {
			v.rep.Faults = append(v.rep.Faults, gapFault(v.expect, t-1))
		}
		v.expect = max(v.expect, t+1)
		if err := v.tick(); err != nil {
			return err
		}
	}
}

// nextTombstones reads the next page of tombstones.
func (v *verifier) nextTombstones() error {
	var err error
	v.tombs, err = scanRows(v.ctx, v.tx, `SELECT seq FROM journal_tombstones WHERE seq > ? ORDER BY seq LIMIT 4096`,
		[]any{v.tombsAfter}, scanInt64)
	if err != nil {
		return fmt.Errorf("store: verify: tombstones: %w", err)
	}
	v.tomb = 0
	if len(v.tombs) == 0 {
		v.tombsDone = true
		return nil
	}
	v.tombsAfter = v.tombs[len(v.tombs)-1]
	return nil
}

// tick counts one checked entry or tombstone, reporting progress and
// honouring cancellation every progressEvery.
func (v *verifier) tick() error {
	v.done++
	if v.done%progressEvery != 0 {
		return nil
	}
	if v.progress != nil {
		v.progress(v.done, v.total)
	}
	return v.ctx.Err()
}

// fault records a finding.
func (v *verifier) fault(kind FaultKind, seq int64, detail string) {
	v.rep.Faults = append(v.rep.Faults, Fault{Kind: kind, Seq: seq, Detail: detail})
}

// lookupKeys checks that e, in a partition with lookup keys, is in the keys
// of its thread and of its conversation.
func (v *verifier) lookupKeys(e *Entry) error {
	if p := partitionOf(e.Seq); p != v.part {
		recs, err := storedKeyRecords(v.ctx, v.tx, p)
		if err != nil {
			return err
		}
		v.part, v.recs = p, recs
	}
	var missing []string
	t, c := rowKeyRecords(e.Seq, e.Thread, e.Conversation)
	if !v.recs[t] {
		missing = append(missing, "thread")
	}
	if !v.recs[c] {
		missing = append(missing, "conversation")
	}
	if len(missing) > 0 {
		v.fault(FaultLookupKey, e.Seq, fmt.Sprintf("the entry is missing from the lookup keys of its %s (partition %d)",
			strings.Join(missing, " and "), v.part))
	}
	return nil
}

// gapFault describes the missing sequence numbers from..to.
func gapFault(from, to int64) Fault {
	detail := fmt.Sprintf("seq %d is missing without a tombstone", from)
	if to > from {
		detail = fmt.Sprintf("seqs %d..%d (%d) are missing without tombstones", from, to, to-from+1)
	}
	return Fault{Kind: FaultGap, Seq: from, Detail: detail}
}

// checkEntry verifies one journal entry's required fields and hash.
func checkEntry(e *Entry) []Fault {
	var missing []string
	if e.Time.UnixNano() == 0 {
		missing = append(missing, "time")
	}
	if !e.Direction.Valid() {
		missing = append(missing, "direction")
	}
	if !e.Kind.Valid() {
		missing = append(missing, "kind")
	}
	if e.Kind != DeadLetter {
		if e.Thread == "" {
			missing = append(missing, "thread")
		}
		if e.From == "" {
			missing = append(missing, "from")
		}
	}
	if len(e.Bytes) == 0 {
		missing = append(missing, "bytes")
	}
	var faults []Fault
	if len(missing) > 0 {
		faults = append(faults, Fault{Kind: FaultMissingField, Seq: e.Seq,
			Detail: "missing or invalid " + strings.Join(missing, ", ")})
	}
	if got := sha256.Sum256(e.Bytes); got != e.SHA256 {
		faults = append(faults, Fault{Kind: FaultHash, Seq: e.Seq,
			Detail: fmt.Sprintf("stored sha256 %x, bytes hash to %x", e.SHA256, got)})
	}
	return faults
}

// storedKeyRecords reads the lookup-key records of partition part as a set.
func storedKeyRecords(ctx context.Context, tx *sql.Tx, part int64) (map[uint64]bool, error) {
	recs := map[uint64]bool{}
	err := eachRow(ctx, tx, `SELECT keys FROM journal_keys WHERE part = ?`, []any{part}, func(rows *sql.Rows) error {
		var blob []byte
		err := rows.Scan(&blob)
		for i := 0; i+keyRecordSize <= len(blob); i += keyRecordSize {
			recs[binary.BigEndian.Uint64(blob[i:])] = true
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
	}
	return recs, nil
}

// quickCheck runs PRAGMA quick_check and turns its findings into faults.
func quickCheck(ctx context.Context, tx *sql.Tx) ([]Fault, error) {
	var faults []Fault
	err := eachRow(ctx, tx, `PRAGMA quick_check`, nil, func(rows *sql.Rows) error {
		var msg string
		err := rows.Scan(&msg)
		if err == nil && msg != "ok" {
			faults = append(faults, Fault{Kind: FaultIntegrity, Detail: msg})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: verify: quick_check: %w", err)
	}
	return faults, nil
}
