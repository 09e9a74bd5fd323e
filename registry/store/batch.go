package store

import (
	"fmt"
)

// journalInsert inserts journal rows with their pre-assigned seqs.
var journalInsert = newRowStatement(`INSERT INTO journal (seq, time_ns, thread, conversation, direction, kind,
	from_name, to_name, listener, payload_tag, sha256, bytes, diagnostics) VALUES `,
	`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ``, 13)

// deliveryInsert records delivery marks for the listed seqs that are in the
// journal; marks already present are kept (first delivery wins).
var deliveryInsert = newRowStatement(`INSERT OR IGNORE INTO journal_deliveries (seq, delivered_at)
	SELECT v.column1, v.column2 FROM (VALUES `, `(?, ?)`, `) AS v JOIN journal AS j ON j.seq = v.column1`, 2)

// unmarkedSeqs selects, among the listed seqs, those with neither a
// delivery mark nor a tombstone: seqs that were never journaled.
var unmarkedSeqs = newRowStatement(`SELECT v.column1 FROM (VALUES `, `(?)`, `) AS v
	WHERE NOT EXISTS (SELECT 1 FROM journal_deliveries AS d WHERE d.seq = v.column1)
	AND NOT EXISTS (SELECT 1 FROM journal_tombstones AS t WHERE t.seq = v.column1)`, 1)

// pending is what a transaction has accumulated since its last ordered op
// (opFunc): journal appends, delivery marks and kernel-state writes, each
// applied as multi-row statements when the run ends. Appends are applied
// before the marks of the same run, so a mark may follow its append in one
// batch. The writer reuses one pending across transactions.
type pending struct {
	appends []*op
	marks   []*op
	kernel  kernelWrites
	args    []any
	seen    map[int64]struct{}
}

// reset empties p for the next run, keeping its storage.
func (p *pending) reset() {
	clear(p.appends)
	clear(p.marks)
	p.appends, p.marks = p.appends[:0], p.marks[:0]
	clear(p.args)
	p.args = p.args[:0]
	p.kernel.reset()
}

// apply runs ops inside the open transaction and returns how many write ops
// it applied and the highest journal seq among them. Appends, marks and
// kernel writes are gathered and applied in bulk; an opFunc first applies
// what was gathered before it, so it sees every earlier op.
func (w *writer) apply(ops []op) (applied int, high int64, err error) {
	p := &w.pending
	p.reset()
	defer p.reset() // drop references to ops in the reused batch
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case opFlush:
			continue
		case opAppend:
			p.appends = append(p.appends, o)
			o.result = o.entry.Seq
			high = max(high, o.entry.Seq)
		case opDeliver:
			p.marks = append(p.marks, o)
		case opPut, opDelete:
			p.kernel.add(o)
		case opFunc:
			if err := w.applyPending(p); err != nil {
				return 0, 0, err
			}
			if o.result, err = o.fn(w); err != nil {
				return 0, 0, fmt.Errorf("store: %s: %w", o.name, err)
			}
		}
		applied++
	}
	if err := w.applyPending(p); err != nil {
		return 0, 0, err
	}
	return applied, high, nil
}

// applyPending applies and clears what p gathered.
func (w *writer) applyPending(p *pending) error {
	if err := w.insertEntries(p); err != nil {
		return err
	}
	if err := w.insertMarks(p); err != nil {
		return err
	}
	if err := w.applyKernel(p); err != nil {
		return fmt.Errorf("store: %s: %w", p.kernel.name(), err)
	}
	p.reset()
	return nil
}

// groupName names a group of ops in an error: the op's own name when it is
// alone (the one-by-one retry), else the group.
func groupName(ops []*op, group string) string {
	if len(ops) == 1 {
		return ops[0].name
	}
	return fmt.Sprintf("%s (%d ops)", group, len(ops))
}

// insertEntries inserts the gathered journal appends.
func (w *writer) insertEntries(p *pending) error {
	if len(p.appends) == 0 {
		return nil
	}
	args := p.args[:0]
	for _, o := range p.appends {
		e := &o.entry
		args = append(args, e.Seq, e.Time.UnixNano(), e.Thread, e.Conversation, e.Direction.String(), e.Kind.String(),
			e.From, e.To, e.Listener, e.PayloadTag, e.SHA256[:], e.Bytes, e.Diagnostics)
	}
	p.args = args
	if _, err := w.execRows(journalInsert, len(p.appends), args); err != nil {
		return fmt.Errorf("store: %s: insert journal entry: %w", groupName(p.appends, "append"), err)
	}
	return nil
}

// insertMarks records the gathered delivery marks in bulk. When fewer rows
// were inserted than distinct seqs were marked, the rest must be already
// marked or pruned (tombstoned); a seq that is neither was never journaled,
// and the batch fails with ErrNotFound (its ops are then retried one by one,
// so only that mark fails).
func (w *writer) insertMarks(p *pending) error {
	if len(p.marks) == 0 {
		return nil
	}
	if p.seen == nil {
		p.seen = make(map[int64]struct{})
	}
	clear(p.seen)
	args := p.args[:0]
	for _, o := range p.marks {
		args = append(args, o.seq, o.at)
		p.seen[o.seq] = struct{}{}
	}
	p.args = args
	name := groupName(p.marks, "mark delivered")
	n, err := w.execRows(deliveryInsert, len(p.marks), args)
	if err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	if n == int64(len(p.seen)) {
		return nil
	}
	args = args[:0]
	for seq := range p.seen {
		args = append(args, seq)
	}
	p.args = args
	unknown, err := w.queryRows(unmarkedSeqs, len(args), args)
	if err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("store: %s: %w: journal seq %d", name, ErrNotFound, unknown[0])
	}
	return nil
}
