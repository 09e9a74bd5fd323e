package store

import (
	"fmt"
	"slices"
)

// packInsert inserts journal packs (journal_packs.go).
var packInsert = newRowStatement(`INSERT OR ROLLBACK INTO journal_packs (first_seq, last_seq, codec, data) VALUES `,
	`(?, ?, ?, ?)`, ``, 4)

// packGroup is what the entries of one pack share: the listener, which
// selects their retention policy, and whether they are messages.
type packGroup struct {
	listener string
	message  bool
}

// packChunk is a run of appends (indices into the batch) bound for one
// pack, with their total size.
type packChunk struct {
	idx  []int
	size int
}

// packer groups a transaction's journal appends into packs and inserts
// them. The writer keeps one and reuses its storage across transactions.
type packer struct {
	open   map[packGroup]int // group → index of its open chunk
	chunks []packChunk
	packOf []int64  // per append: the key of its pack, 0 when inline
	blocks [][]byte // compressed packs, one buffer per pack
	raw    []byte   // encodePack's scratch
	seqs   []int64  // one pack's seqs
	bodies [][]byte // one pack's bodies
	args   []sqlArg
	// touched collects the packs a sweep's deletions touched.
	touched []int64
}

// writePacks packs the appends that share a group with at least one other
// append of the batch, inserts the packs and returns, per append, the key
// of its pack (0: the append keeps its bytes inline). A batch retried op by
// op thus journals inline.
func (w *writer) writePacks(appends []*op) ([]int64, error) {
	k := &w.packer
	k.plan(appends)
	k.args = k.args[:0]
	packs := 0
	for _, c := range k.chunks {
		if len(c.idx) < 2 {
			continue
		}
		k.seqs, k.bodies = k.seqs[:0], k.bodies[:0]
		for _, i := range c.idx {
			k.seqs = append(k.seqs, appends[i].entry.Seq)
			k.bodies = append(k.bodies, appends[i].entry.Bytes)
		}
		if packs == len(k.blocks) {
			k.blocks = append(k.blocks, nil)
		}
		k.blocks[packs], k.raw = encodePack(k.blocks[packs], k.raw, k.seqs, k.bodies)
		first := k.seqs[0]
		for _, i := range c.idx {
			k.packOf[i] = first
		}
		k.args = append(k.args, intArg(first), intArg(k.seqs[len(k.seqs)-1]), intArg(packCodecS2), blobArg(k.blocks[packs]))
		packs++
	}
	clear(k.bodies) // drop references to the batch's bytes
	if packs == 0 {
		return k.packOf, nil
	}
	err := chunkRows(packInsert, packs, k.args, func(query string, args []sqlArg) error {
		w.counters.statements.Add(1)
		_, err := w.conn.runArgs(query, args, nil)
		return err
	})
	clear(k.args)
	if err != nil {
		return nil, fmt.Errorf("insert journal pack: %w", err)
	}
	return k.packOf, nil
}

// plan splits appends into chunks: per group in batch order, a new chunk
// whenever the open one would exceed packMaxRaw.
func (k *packer) plan(appends []*op) {
	if k.open == nil {
		k.open = map[packGroup]int{}
	}
	clear(k.open)
	k.packOf = slices.Grow(k.packOf[:0], len(appends))[:len(appends)]
	clear(k.packOf)
	n := 0
	for i, o := range appends {
		g := packGroup{listener: o.entry.Listener, message: o.entry.Kind == Message}
		size := len(o.entry.Bytes)
		c, ok := k.open[g]
		if !ok || k.chunks[c].size+size > packMaxRaw {
			if n == cap(k.chunks) {
				k.chunks = append(k.chunks[:n], packChunk{})
			}
			k.chunks = k.chunks[:n+1]
			c, n = n, n+1
			k.chunks[c].idx, k.chunks[c].size = k.chunks[c].idx[:0], 0
			k.open[g] = c
		}
		k.chunks[c].idx = append(k.chunks[c].idx, i)
		k.chunks[c].size += size
	}
	k.chunks = k.chunks[:n]
}

// dropEmptyPacks deletes those of packs (keys, possibly repeated) whose
// rows are all gone. Run after rows were deleted, in their transaction.
func (w *writer) dropEmptyPacks(packs []int64) error {
	slices.Sort(packs)
	for _, pack := range slices.Compact(packs) {
		if _, err := w.exec(`DELETE FROM journal_packs AS p WHERE first_seq = ?1 AND NOT EXISTS
			(SELECT 1 FROM journal WHERE seq BETWEEN ?1 AND p.last_seq AND pack = ?1)`, pack); err != nil {
			return fmt.Errorf("delete emptied journal pack %d: %w", pack, err)
		}
	}
	return nil
}
