package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// threadFilter answers "was this thread id never journaled?" without reading
// the journal: a Bloom filter of the lookup keys (journal_keys.go) of every
// thread and conversation id the journal holds or was handed since Open. It
// never forgets an id (a pruned one only costs a false "maybe"), so a "no"
// is exact and a "maybe" is settled by the lookup keys.
//
// The pump asks about every thread id a client chose that is not live
// (pump.ThreadHistory) — a client that follows the Python reference names
// each new conversation with a fresh UUID — and a lookup probes every
// partition of the journal: 0.70-0.76 ms in a 200,000-row journal
// (BenchmarkThreadOriginLookup), so ~4 ms per new conversation in a million
// rows. The filter answers in ~0.5 µs, for ~10 bits per key in memory
// (about 2.5 MB per million rows of distinct threads: each row's thread
// and conversation keys), and an append pays ~70 ns to feed it
// (BenchmarkThreadFilterAdd).
//
// Open sizes it from journal_keys and fills it in the background
// (loadThreadFilterInBackground); until the load is done every answer is
// "maybe". Ids appended meanwhile are added as they are prepared
// (prepareEntry), before the writer sees them. A filter that fills up grows
// by another layer of twice its size; an id is absent when no layer has it.
type threadFilter struct {
	ready atomic.Bool
	// loaded is closed once the filter is ready.
	loaded chan struct{}
	growMu sync.Mutex
	layers atomic.Pointer[[]*bloomLayer]
}

// bloomLayer is one fixed-size Bloom filter of a threadFilter, blocked: an
// id's bits all lie in one block of 512 bits (a cache line), so adding or
// testing one costs one cache miss rather than bloomHashes of them.
type bloomLayer struct {
	bits   []atomic.Uint64
	blocks uint64 // number of 512-bit blocks
	cap    int64  // ids it takes before the filter adds a layer
	n      atomic.Int64
}

// bloomHashes is the number of bits an id sets: with ~10 bits per id, a
// false "maybe" about 1 % of the time.
const bloomHashes = 7

// minFilterIDs is the smallest capacity of a threadFilter layer.
const minFilterIDs = 1 << 16

func newBloomLayer(ids int64) *bloomLayer {
	blocks := (uint64(ids)*10 + 511) / 512
	return &bloomLayer{bits: make([]atomic.Uint64, blocks*8), blocks: blocks, cap: ids}
}

// newThreadFilter returns an empty filter, not ready, for about ids ids.
func newThreadFilter(ids int64) *threadFilter {
	f := &threadFilter{loaded: make(chan struct{})}
	layers := []*bloomLayer{newBloomLayer(max(ids, minFilterIDs))}
	f.layers.Store(&layers)
	return f
}

// filterKey is the part of id's lookup key that journal_keys keeps (its
// top 48 bits: keyRecord).
func filterKey(kind byte, id string) uint64 { return lookupKey(kind, id) >> keyOffBits }

// positions calls fn with the word index and mask of each of key v's bits,
// until fn returns false, and reports whether it never did.
func (l *bloomLayer) positions(v uint64, fn func(word int, mask uint64) bool) bool {
	h1 := v * 0x9e3779b97f4a7c15
	h2 := (v ^ v>>23) * 0xc2b2ae3d27d4eb4f
	base := int(h1%l.blocks) * 8
	for i := range bloomHashes {
		bit := h2 >> (9 * i) & 511
		if !fn(base+int(bit/64), 1<<(bit%64)) {
			return false
		}
	}
	return true
}

func (l *bloomLayer) add(v uint64) {
	l.positions(v, func(word int, mask uint64) bool {
		l.bits[word].Or(mask)
		return true
	})
	l.n.Add(1)
}

func (l *bloomLayer) has(v uint64) bool {
	return l.positions(v, func(word int, mask uint64) bool { return l.bits[word].Load()&mask != 0 })
}

// add records key v (filterKey) in the newest layer, adding a layer when
// it is full. A key the newest layer has already (the thread's earlier
// entries) is only read: the appenders of a busy journal share no cache
// line they write for it.
func (f *threadFilter) add(v uint64) {
	layers := *f.layers.Load()
	last := layers[len(layers)-1]
	if last.has(v) {
		return
	}
	if last.n.Load() >= last.cap {
		last = f.grow(last)
	}
	last.add(v)
}

// grow adds a layer of twice full's capacity unless another goroutine did.
func (f *threadFilter) grow(full *bloomLayer) *bloomLayer {
	f.growMu.Lock()
	defer f.growMu.Unlock()
	layers := *f.layers.Load()
	if last := layers[len(layers)-1]; last != full {
		return last
	}
	next := append(layers[:len(layers):len(layers)], newBloomLayer(2*full.cap))
	f.layers.Store(&next)
	return next[len(next)-1]
}

// mayHave reports whether key v may have been added: false only when it
// never was, and never before the filter is ready.
func (f *threadFilter) mayHave(v uint64) bool {
	if !f.ready.Load() {
		return true
	}
	for _, l := range *f.layers.Load() {
		if l.has(v) {
			return true
		}
	}
	return false
}

// countLookupKeys returns the number of lookup keys in journal_keys (each
// an 8-byte record), to size the filter.
func countLookupKeys(ctx context.Context, q queryRower) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT coalesce(sum(length(keys)), 0) / `+strconv.Itoa(keyRecordSize)+
		` FROM journal_keys`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count lookup keys: %w", err)
	}
	return n, nil
}

// errLoadStopped ends a filter load the store's Close interrupted.
var errLoadStopped = errors.New("store: thread filter: the store closed")

// loadThreadFilter adds every lookup key of journal_keys, and the thread keys
// of the rows after the last summarised partition, to f from one read
// snapshot, then makes f ready. Ids appended since Open were added as they
// were prepared, so f holds every thread id the journal has. It stops,
// leaving f not ready, once done is closed.
func (r *Reader) loadThreadFilter(f *threadFilter, done <-chan struct{}) error {
	seen := 0
	stopped := func() bool { // looks at done every 4096 rows, from the first
		if seen++; seen%4096 != 1 {
			return false
		}
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	return r.readTx(func(ctx context.Context, tx *sql.Tx) error {
		err := eachRow(ctx, tx, `SELECT keys FROM journal_keys`, nil, func(rows *sql.Rows) error {
			var keys []byte
			if stopped() {
				return errLoadStopped
			} else if err := rows.Scan(&keys); err != nil {
				return err
			}
			for j := 0; j+keyRecordSize <= len(keys); j += keyRecordSize {
				f.add(binary.BigEndian.Uint64(keys[j:]) >> keyOffBits)
			}
			return nil
		})
		if err == nil {
			err = eachRow(ctx, tx, `SELECT thread FROM journal_rows
			WHERE seq >= coalesce((SELECT max(part) + 1 FROM journal_keys), 0) << `+strconv.Itoa(journalPartitionBits),
				nil, func(rows *sql.Rows) error {
					var thread string
					if stopped() {
						return errLoadStopped
					} else if err := rows.Scan(&thread); err != nil {
						return err
					}
					f.add(filterKey(keyThread, thread))
					return nil
				})
		}
		if err != nil {
			return fmt.Errorf("store: thread filter: %w", err)
		}
		f.ready.Store(true)
		close(f.loaded)
		return nil
	})
}

// sizeThreadFilter makes the store's thread filter, sized for the keys
// journal_keys holds (a thread key and a conversation key per thread and
// partition, so about twice the threads): the journal can about double
// before the filter adds a layer.
func (s *Store) sizeThreadFilter(ctx context.Context) error {
	n, err := countLookupKeys(ctx, s.rdb)
	if err != nil {
		return err
	}
	s.threads = newThreadFilter(n)
	return nil
}

// loadThreadFilterInBackground fills the store's thread filter; Close
// waits for the load or stops it.
func (s *Store) loadThreadFilterInBackground() {
	s.sweepers.Add(1)
	go func() {
		defer s.sweepers.Done()
		if err := s.Reader.loadThreadFilter(s.threads, s.done); err != nil && !errors.Is(err, errLoadStopped) {
			s.log.Warn("store: thread filter not loaded: thread lookups read the journal", "error", err)
		}
	}()
}

// MayHaveThread reports whether thread id may have been journaled: false
// means it never was (no entry of the journal, nor any appended since the
// store opened, is on it), true that Thread may find its entries. It reads
// no database; it answers true until the filter built at Open is loaded.
func (s *Store) MayHaveThread(id string) bool {
	return s.threads.mayHave(filterKey(keyThread, id))
}
