package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
)

// ThreadFirsts returns the first committed entry of each of the threads
// ids, by id (a thread without entries is absent): what ThreadEntries
// would list first, reading one row per thread rather than all of them —
// the lowest seq the thread's lookup keys name, checked against the row (a
// hash collision or a pruned row moves on to the next), and the rows the
// keys do not cover yet for a thread they name none of.
func (r *Reader) ThreadFirsts(ids []string) (map[string]Entry, error) {
	out := map[string]Entry{}
	if len(ids) == 0 {
		return out, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	err := r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		keyed, tail, err := keyedSeqs(ctx, tx, keyThread, ids)
		if err != nil {
			return err
		}
		for _, seqs := range keyed {
			slices.Sort(seqs)
		}
		pending := map[string][]int64{}
		for id, seqs := range keyed {
			pending[id] = seqs
		}
		for len(pending) > 0 {
			probe := map[int64][]string{}
			var seqs []int64
			for id, c := range pending {
				if len(probe[c[0]]) == 0 {
					seqs = append(seqs, c[0])
				}
				probe[c[0]] = append(probe[c[0]], id)
				pending[id] = c[1:]
			}
			seqList, err := json.Marshal(seqs)
			if err != nil {
				return err
			}
			err = eachEntry(ctx, tx, `SELECT `+entryColumns+` FROM journal_entries WHERE seq IN (SELECT value FROM json_each(?1))`,
				[]any{string(seqList)}, func(e *Entry) error {
					if slices.Contains(probe[e.Seq], e.Thread) {
						out[e.Thread] = *e
						delete(pending, e.Thread)
					}
					return nil
				})
			if err != nil {
				return err
			}
			for id, c := range pending {
				if len(c) == 0 {
					delete(pending, id)
				}
			}
		}
		var rest []string
		for _, id := range ids {
			if _, ok := out[id]; !ok {
				rest = append(rest, id)
			}
		}
		if len(rest) == 0 {
			return nil
		}
		idList, err := json.Marshal(rest)
		if err != nil {
			return err
		}
		return eachEntry(ctx, tx, `SELECT `+entryColumns+` FROM journal_entries WHERE seq >= ?1
			AND thread IN (SELECT value FROM json_each(?2)) ORDER BY seq`, []any{tail, string(idList)},
			func(e *Entry) error {
				if _, ok := out[e.Thread]; !ok {
					out[e.Thread] = *e
				}
				return nil
			})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
