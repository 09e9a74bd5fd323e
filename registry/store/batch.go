package store

import (
	"database/sql/driver"
	"fmt"
)

// pending is what a transaction has accumulated since its last ordered op
// (opFunc): journal appends, delivery marks and kernel-state writes, each
// applied as multi-row statements when the run ends, and extension writes
// (extension.go), applied after them in queue order. Appends are applied
// before the marks of the same run, so a mark may follow its append in one
// batch. The writer reuses one pending across transactions.
type pending struct {
	// appends are the gathered journal entries, appendOps the ops they came
	// from (an opAppendGroup brings several).
	appends   []*Entry
	appendOps []*op
	marks     []*op
	kernel    kernelWrites
	// ext are the extension writes (extension.go), in queue order.
	ext []*op
	// values are the journal INSERT's arguments (insertEntries), which
	// point into the appended entries and into times, digests and texts:
	// their times in Unix ns, SHA-256 digests and envelopes as strings.
	values  []driver.NamedValue
	times   []int64
	digests [][]byte
	texts   []string
	// routeIDs are the journal_routes ids of the appends.
	routeIDs []int64
}

// reset empties p for the next run, keeping its storage.
func (p *pending) reset() {
	clear(p.appends)
	clear(p.appendOps)
	clear(p.marks)
	clear(p.ext)
	p.appends, p.appendOps, p.marks, p.ext = p.appends[:0], p.appendOps[:0], p.marks[:0], p.ext[:0]
	clear(p.values)
	clear(p.digests)
	clear(p.texts)
	p.values, p.times, p.digests, p.texts = p.values[:0], p.times[:0], p.digests[:0], p.texts[:0]
	p.routeIDs = p.routeIDs[:0]
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
			p.appends = append(p.appends, &o.entry)
			p.appendOps = append(p.appendOps, o)
			o.result = o.entry.Seq
			high = max(high, o.entry.Seq)
		case opAppendGroup:
			for i := range o.entries {
				p.appends = append(p.appends, &o.entries[i])
			}
			p.appendOps = append(p.appendOps, o)
			if len(o.entries) > 0 {
				o.result = o.entries[0].Seq
				high = max(high, o.entries[len(o.entries)-1].Seq)
			}
			applied += len(o.entries) - 1 // each entry counts as a write
		case opDeliver:
			p.marks = append(p.marks, o)
		case opMarks:
			p.marks = append(p.marks, o)
			applied += len(o.seqs) - 1 // each mark counts as a write
		case opPut, opDelete:
			p.kernel.add(o)
		case opExt:
			p.ext = append(p.ext, o)
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
	if err := w.applyExtensions(p); err != nil {
		return err
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

// insertMarks records the gathered delivery marks with the writer's
// delivery tracker (deliveries.go); they are persisted when the transaction
// ends. A mark of a seq that was never journaled fails the batch with
// ErrNotFound (its ops are then retried one by one, so only that mark
// fails).
func (w *writer) insertMarks(p *pending) error {
	for _, o := range p.marks {
		if o.kind == opMarks {
			for _, seq := range o.seqs {
				if err := w.deliveries.deliver(seq); err != nil {
					return fmt.Errorf("store: %s: %w", groupName(p.marks, "mark delivered"), err)
				}
			}
			continue
		}
		if err := w.deliveries.deliver(o.seq); err != nil {
			return fmt.Errorf("store: %s: %w", groupName(p.marks, "mark delivered"), err)
		}
	}
	return nil
}
