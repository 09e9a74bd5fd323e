package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
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
	// FaultPack is a journal pack (journal_packs.go) that is missing,
	// corrupt or lacks an entry a row places in it, or that no row
	// references any more.
	FaultPack FaultKind = "pack"
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
	// Rows is the number of journal rows checked.
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

// progressEvery is how many rows Verify checks between progress calls.
const progressEvery = 1024

// Verify checks the committed journal in one read snapshot: every sequence
// number from 1 to the high-water mark is either a row or a tombstone (never
// both), every row's SHA-256 matches its bytes, no row lacks a required
// field, the delivery watermark is not above the high-water mark, every row
// of a partition with lookup keys is in them (journal_keys.go), and
// SQLite's quick_check passes. progress, when not nil, is called
// with (done, total) as rows and tombstones are checked. The error is for
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

// verify is Verify on db.
func verify(ctx context.Context, db *sql.DB, progress func(done, total int64)) (Report, error) {
	var rep Report
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return rep, fmt.Errorf("store: verify: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	var delivered int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM journal), (SELECT count(*) FROM journal_tombstones),
		(SELECT high_seq FROM journal_state WHERE id = 1), `+watermarkExpr).
		Scan(&rep.Rows, &rep.Tombstones, &rep.HighSeq, &delivered); err != nil {
		return rep, fmt.Errorf("store: verify: count: %w", err)
	}
	if delivered > rep.HighSeq {
		rep.Faults = append(rep.Faults, Fault{Kind: FaultHighWater, Seq: delivered,
			Detail: fmt.Sprintf("delivery watermark %d exceeds the high-water mark %d", delivered, rep.HighSeq)})
	}
	total := rep.Rows + rep.Tombstones
	rows, err := tx.QueryContext(ctx, `SELECT seq, 0, time_ns, thread, direction, kind, from_name, sha256, bytes,
		coalesce(pack, 0) FROM journal
		UNION ALL SELECT seq, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0 FROM journal_tombstones
		ORDER BY 1, 2`)
	if err != nil {
		return rep, fmt.Errorf("store: verify: scan: %w", err)
	}
	defer rows.Close()

	var (
		expect  int64 = 1
		done    int64
		lastRow int64 = -1
		packs   packReader
	)
	for rows.Next() {
		var (
			seq, tomb, pack        int64
			ns                     sql.NullInt64
			thread, dir, kind, frm sql.NullString
			sum, body              []byte
		)
		if err := rows.Scan(&seq, &tomb, &ns, &thread, &dir, &kind, &frm, &sum, &body, &pack); err != nil {
			return rep, fmt.Errorf("store: verify: scan: %w", err)
		}
		switch {
		case seq == lastRow:
			rep.Faults = append(rep.Faults, Fault{Kind: FaultTombstoned, Seq: seq,
				Detail: "the row is present although a tombstone records its deletion"})
		case seq > expect:
			rep.Faults = append(rep.Faults, gapFault(expect, seq-1))
		}
		if seq >= expect {
			expect = seq + 1
		}
		if tomb == 0 {
			lastRow = seq
			var packErr error
			if pack != 0 {
				if body, packErr = packs.body(ctx, tx, pack, seq); packErr != nil {
					rep.Faults = append(rep.Faults, Fault{Kind: FaultPack, Seq: seq, Detail: packErr.Error()})
				}
			}
			if packErr == nil {
				rep.Faults = append(rep.Faults, checkRow(seq, ns, thread, dir, kind, frm, sum, body)...)
			}
		}
		done++
		if progress != nil && done%progressEvery == 0 {
			progress(done, total)
		}
		if done%progressEvery == 0 {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("store: verify: scan: %w", err)
	}
	switch last := expect - 1; {
	case last < rep.HighSeq:
		rep.Faults = append(rep.Faults, gapFault(expect, rep.HighSeq))
	case last > rep.HighSeq:
		rep.Faults = append(rep.Faults, Fault{Kind: FaultHighWater, Seq: last,
			Detail: fmt.Sprintf("seq %d exceeds the high-water mark %d", last, rep.HighSeq)})
	}
	if progress != nil {
		progress(done, total)
	}
	packFaults, err := checkPacksReferenced(ctx, tx)
	if err != nil {
		return rep, err
	}
	rep.Faults = append(rep.Faults, packFaults...)
	keyFaults, err := checkLookupKeys(ctx, tx)
	if err != nil {
		return rep, err
	}
	rep.Faults = append(rep.Faults, keyFaults...)
	slices.SortStableFunc(rep.Faults, func(a, b Fault) int { return cmp.Compare(a.Seq, b.Seq) })
	faults, err := quickCheck(ctx, tx)
	if err != nil {
		return rep, err
	}
	rep.Faults = append(rep.Faults, faults...)
	return rep, nil
}

// gapFault describes the missing sequence numbers from..to.
func gapFault(from, to int64) Fault {
	detail := fmt.Sprintf("seq %d is missing without a tombstone", from)
	if to > from {
		detail = fmt.Sprintf("seqs %d..%d (%d) are missing without tombstones", from, to, to-from+1)
	}
	return Fault{Kind: FaultGap, Seq: from, Detail: detail}
}

// checkRow verifies one journal row's required fields and hash.
func checkRow(seq int64, ns sql.NullInt64, thread, dir, kind, from sql.NullString, sum, body []byte) []Fault {
	var missing []string
	if !ns.Valid || ns.Int64 == 0 {
		missing = append(missing, "time")
	}
	if _, err := ParseDirection(dir.String); err != nil {
		missing = append(missing, "direction")
	}
	k, err := ParseKind(kind.String)
	if err != nil {
		missing = append(missing, "kind")
	}
	if k != DeadLetter {
		if thread.String == "" {
			missing = append(missing, "thread")
		}
		if from.String == "" {
			missing = append(missing, "from")
		}
	}
	if len(body) == 0 {
		missing = append(missing, "bytes")
	}
	var faults []Fault
	if len(missing) > 0 {
		faults = append(faults, Fault{Kind: FaultMissingField, Seq: seq,
			Detail: "missing or invalid " + strings.Join(missing, ", ")})
	}
	if got := sha256.Sum256(body); len(sum) != len(got) || string(sum) != string(got[:]) {
		faults = append(faults, Fault{Kind: FaultHash, Seq: seq,
			Detail: fmt.Sprintf("stored sha256 %x, bytes hash to %x", sum, got)})
	}
	return faults
}

// checkPacksReferenced reports journal packs that no row references: the
// sweep deletes a pack with its last row.
func checkPacksReferenced(ctx context.Context, tx *sql.Tx) ([]Fault, error) {
	rows, err := tx.QueryContext(ctx, `SELECT first_seq FROM journal_packs AS p WHERE NOT EXISTS
		(SELECT 1 FROM journal WHERE seq BETWEEN p.first_seq AND p.last_seq AND pack = p.first_seq) ORDER BY first_seq`)
	if err != nil {
		return nil, fmt.Errorf("store: verify: packs: %w", err)
	}
	defer rows.Close()
	var faults []Fault
	for rows.Next() {
		var first int64
		if err := rows.Scan(&first); err != nil {
			return nil, fmt.Errorf("store: verify: packs: %w", err)
		}
		faults = append(faults, Fault{Kind: FaultPack, Seq: first,
			Detail: fmt.Sprintf("pack %d holds the bytes of no journal row", first)})
	}
	return faults, rows.Err()
}

// checkLookupKeys checks that every row of the summarised partitions is in
// the lookup keys of its thread and of its conversation.
func checkLookupKeys(ctx context.Context, tx *sql.Tx) ([]Fault, error) {
	var end int64 // first seq after the summarised partitions
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(part) + 1, 0) FROM journal_keys`).Scan(&end); err != nil {
		return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
	}
	end <<= journalPartitionBits
	rows, err := tx.QueryContext(ctx, `SELECT seq, thread, conversation FROM journal WHERE seq < ? ORDER BY seq`, end)
	if err != nil {
		return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
	}
	defer rows.Close()
	var (
		faults []Fault
		part   int64 = -1
		recs   map[uint64]bool
	)
	for rows.Next() {
		var (
			seq          int64
			thread, conv string
		)
		if err := rows.Scan(&seq, &thread, &conv); err != nil {
			return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
		}
		if p := partitionOf(seq); p != part {
			part = p
			if recs, err = storedKeyRecords(ctx, tx, p); err != nil {
				return nil, err
			}
		}
		var missing []string
		t, c := rowKeyRecords(seq, thread, conv)
		if !recs[t] {
			missing = append(missing, "thread")
		}
		if !recs[c] {
			missing = append(missing, "conversation")
		}
		if len(missing) > 0 {
			faults = append(faults, Fault{Kind: FaultLookupKey, Seq: seq, Detail: fmt.Sprintf(
				"the row is missing from the lookup keys of its %s (partition %d)", strings.Join(missing, " and "), part)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
	}
	return faults, nil
}

// storedKeyRecords reads the lookup-key records of partition part as a set.
func storedKeyRecords(ctx context.Context, tx *sql.Tx, part int64) (map[uint64]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT keys FROM journal_keys WHERE part = ?`, part)
	if err != nil {
		return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
	}
	defer rows.Close()
	recs := map[uint64]bool{}
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			return nil, fmt.Errorf("store: verify: lookup keys: %w", err)
		}
		for i := 0; i+keyRecordSize <= len(blob); i += keyRecordSize {
			recs[binary.BigEndian.Uint64(blob[i:])] = true
		}
	}
	return recs, rows.Err()
}

// quickCheck runs PRAGMA quick_check and turns its findings into faults.
func quickCheck(ctx context.Context, tx *sql.Tx) ([]Fault, error) {
	rows, err := tx.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return nil, fmt.Errorf("store: verify: quick_check: %w", err)
	}
	defer rows.Close()
	var faults []Fault
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return nil, fmt.Errorf("store: verify: quick_check: %w", err)
		}
		if msg != "ok" {
			faults = append(faults, Fault{Kind: FaultIntegrity, Detail: msg})
		}
	}
	return faults, rows.Err()
}
