package store

import (
	"errors"
	"fmt"
)

// journalInsert inserts journal rows under their pre-assigned seqs (bound
// explicitly, or NULL for SQLite's next rowid: insertEntries). OR
// ROLLBACK: a failing row ends the whole transaction, which the writer
// rolls back and retries op by op anyway (writer.commit), so SQLite need not
// keep a statement journal to undo just this statement (a copy of every page
// the multi-row insert touches: ~3 % of the writer's CPU in the profile of
// BenchmarkJournalFlow).
var journalInsert = newRowStatement(`INSERT OR ROLLBACK INTO journal (seq, time_ns, thread, conversation, direction, kind,
	from_name, to_name, listener, payload_tag, sha256, bytes, diagnostics, pack) VALUES `,
	`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ``, 14)

// pending is what a transaction has accumulated since its last ordered op
// (opFunc): journal appends, delivery marks and kernel-state writes, each
// applied as multi-row statements when the run ends. Appends are applied
// before the marks of the same run, so a mark may follow its append in one
// batch. The writer reuses one pending across transactions.
type pending struct {
	appends []*op
	marks   []*op
	kernel  kernelWrites
	args    []sqlArg
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
	// A run of consecutive seqs binds only the first explicitly; the others
	// are NULL and SQLite numbers them max(seq)+1, which is the same seq
	// without the uniqueness probe and B-tree seek an explicit key costs
	// (0.6–0.8 µs of ~5 per row inserting bare journal rows; the seek's
	// ~0.35 µs per envelope leaves BenchmarkJournalFlow's profile).
	// checkNumbered confirms the numbering after every statement.
	implicit := consecutive(p.appends)
	packOf, err := w.writePacks(p.appends)
	if err != nil {
		return fmt.Errorf("store: %s: %w", groupName(p.appends, "append"), err)
	}
	args := p.args[:0]
	for i, o := range p.appends {
		e := &o.entry
		seq := intArg(e.Seq)
		if implicit && i > 0 {
			seq = sqlArg{} // NULL
		}
		body, pack := blobArg(e.Bytes), sqlArg{}
		if packOf[i] != 0 {
			body, pack = sqlArg{}, intArg(packOf[i])
		}
		args = append(args, seq, intArg(e.Time.UnixNano()), textArg(e.Thread), textArg(e.Conversation),
			textArg(e.Direction.String()), textArg(e.Kind.String()), textArg(e.From), textArg(e.To),
			textArg(e.Listener), textArg(e.PayloadTag), blobArg(e.SHA256[:]), body, textArg(e.Diagnostics), pack)
		w.listeners.note(e.Listener)
		w.deliveries.appended(e)
		w.keys.inserted(e)
	}
	p.args = args
	off := 0
	err = chunkRows(journalInsert, len(p.appends), args, func(query string, args []sqlArg) error {
		w.counters.statements.Add(1)
		if _, err := w.conn.runArgs(query, args, nil); err != nil {
			return err
		}
		off += len(args) / journalInsert.cols
		return w.checkNumbered(p.appends[off-1].entry.Seq)
	})
	if err != nil {
		return fmt.Errorf("store: %s: insert journal entry: %w", groupName(p.appends, "append"), err)
	}
	if err := w.registerListeners(); err != nil {
		return fmt.Errorf("store: %s: %w", groupName(p.appends, "append"), err)
	}
	return nil
}

// consecutive reports whether the appends' seqs follow one another.
func consecutive(appends []*op) bool {
	for i := 1; i < len(appends); i++ {
		if appends[i].entry.Seq != appends[i-1].entry.Seq+1 {
			return false
		}
	}
	return true
}

// errMisnumbered reports that SQLite numbered an implicitly keyed journal
// row differently from the seq the store assigned it.
var errMisnumbered = errors.New("journal row numbered out of sequence")

// checkNumbered confirms that the row the last statement inserted last got
// seq. Rows keyed implicitly are numbered max(seq)+1, which is their
// assigned seq unless the journal holds a higher seq than this batch's: the
// batch then fails and is retried op by op, each row with its explicit seq.
func (w *writer) checkNumbered(seq int64) error {
	if got := w.conn.lastInsertRowid(); got != seq {
		return fmt.Errorf("%w: seq %d, got %d", errMisnumbered, seq, got)
	}
	return nil
}

// insertMarks records the gathered delivery marks with the writer's
// delivery tracker (deliveries.go); they are persisted when the transaction
// ends. A mark of a seq that was never journaled fails the batch with
// ErrNotFound (its ops are then retried one by one, so only that mark
// fails).
func (w *writer) insertMarks(p *pending) error {
	for _, o := range p.marks {
		if err := w.deliveries.deliver(o.seq); err != nil {
			return fmt.Errorf("store: %s: %w", groupName(p.marks, "mark delivered"), err)
		}
	}
	return nil
}
