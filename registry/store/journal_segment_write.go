package store

import (
	"errors"
	"fmt"
)

// segmentInsert inserts journal segments. OR ROLLBACK: a failing row ends
// the whole transaction, which the writer rolls back and retries op by op
// anyway (writer.commit), so SQLite need not keep a statement journal to
// undo just this statement.
var segmentInsert = newRowStatement(`INSERT OR ROLLBACK INTO journal_segments (first_seq, last_seq, entries, codec, data) VALUES `,
	`(?, ?, ?, ?, ?)`, ``, 5)

// errOutOfSequence reports a journal append whose seq is not above every
// seq the journal already holds.
var errOutOfSequence = errors.New("journal append out of sequence")

// segmenter turns a transaction's journal appends into segments. The
// writer keeps one and reuses its storage across transactions.
type segmenter struct {
	// high is the highest seq committed to the journal (appended or
	// tombstoned); txHigh the same inside the open transaction.
	high, txHigh int64
	enc          segmentEncoder
	entries      []*Entry
	blocks       [][]byte // encoded segments, one buffer per segment
	args         []sqlArg
}

// insertEntries journals the gathered appends: runs of consecutive seqs
// become segments of at most segmentMaxEntries entries and
// segmentMaxRaw bytes of bodies (a larger single entry gets a segment of
// its own).
func (w *writer) insertEntries(p *pending) error {
	if len(p.appends) == 0 {
		return nil
	}
	sg := &w.segments
	for _, e := range p.appends {
		// Append validated the entry; the writer checks again what the
		// journal must never hold (an op built inside the package, a bug).
		if err := e.Validate(); err != nil {
			return fmt.Errorf("store: %s: %w", groupName(p.appendOps, "append"), err)
		}
		if e.Seq <= sg.txHigh {
			return fmt.Errorf("store: %s: %w: seq %d is not above %d", groupName(p.appendOps, "append"),
				errOutOfSequence, e.Seq, sg.txHigh)
		}
		sg.txHigh = e.Seq
	}
	args, segs := sg.args[:0], 0
	for i := 0; i < len(p.appends); {
		size, j := 0, i
		sg.entries = sg.entries[:0]
		for j < len(p.appends) && (j == i || j-i < segmentMaxEntries && size+len(p.appends[j].Bytes) <= segmentMaxRaw &&
			p.appends[j].Seq == p.appends[j-1].Seq+1) {
			e := p.appends[j]
			size += len(e.Bytes)
			sg.entries = append(sg.entries, e)
			w.listeners.note(e.Listener)
			w.deliveries.appended(e)
			w.keys.inserted(e)
			j++
		}
		if segs == len(sg.blocks) {
			sg.blocks = append(sg.blocks, nil)
		}
		first, last := sg.entries[0].Seq, sg.entries[len(sg.entries)-1].Seq
		sg.blocks[segs] = sg.enc.encode(sg.blocks[segs], first, sg.entries)
		args = append(args, intArg(first), intArg(last), intArg(int64(len(sg.entries))), intArg(segmentCodecS2),
			blobArg(sg.blocks[segs]))
		segs++
		i = j
	}
	clear(sg.entries)
	sg.args = args
	err := chunkRows(segmentInsert, segs, args, func(query string, args []sqlArg) error {
		w.counters.statements.Add(1)
		_, err := w.conn.runArgs(query, args, nil)
		return err
	})
	clear(args)
	if err != nil {
		return fmt.Errorf("store: %s: insert journal segment: %w", groupName(p.appendOps, "append"), err)
	}
	if err := w.registerListeners(); err != nil {
		return fmt.Errorf("store: %s: %w", groupName(p.appendOps, "append"), err)
	}
	return nil
}
