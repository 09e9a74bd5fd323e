package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/s2"
)

// TestPackRoundTrip: decodePack returns what encodePack packed, by seq.
func TestPackRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		seqs []int64
		size int
	}{
		{name: "two", seqs: []int64{7, 8}, size: 40},
		{name: "interleaved seqs", seqs: []int64{100, 102, 105, 130}, size: 400},
		{name: "bodies above 127 bytes need two-byte lengths", seqs: []int64{1, 2, 3}, size: 5000},
		{name: "a full batch", seqs: seqRange(1000, 1160), size: 411},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bodies [][]byte
			for i := range tt.seqs {
				bodies = append(bodies, bytes.Repeat(fmt.Appendf(nil, "<m n=\"%d\"/>", i), tt.size/8+1)[:tt.size])
			}
			block, _ := encodePack(nil, nil, tt.seqs, bodies)
			p, err := decodePack(tt.seqs[0], packCodecS2, block)
			must(t, err)
			if d := cmp.Diff(tt.seqs, p.seqs); d != "" {
				t.Errorf("seqs (-want +got):\n%s", d)
			}
			for i, seq := range tt.seqs {
				got, ok := p.body(seq)
				if !ok || !bytes.Equal(got, bodies[i]) {
					t.Errorf("body(%d) = %q, %v", seq, got, ok)
				}
			}
			if _, ok := p.body(tt.seqs[len(tt.seqs)-1] + 1); ok {
				t.Error("body of a seq the pack does not hold was found")
			}
		})
	}
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s < to; s++ {
		out = append(out, s)
	}
	return out
}

// TestDecodePackRejects: decodePack refuses what encodePack never writes.
func TestDecodePackRejects(t *testing.T) {
	raw := func(parts ...[]byte) []byte { return s2.Encode(nil, bytes.Join(parts, nil)) }
	valid, _ := encodePack(nil, nil, []int64{5, 6}, [][]byte{[]byte("ab"), []byte("c")})
	tests := []struct {
		name  string
		first int64
		codec int64
		data  []byte
	}{
		{name: "unknown codec", first: 5, codec: 2, data: valid},
		{name: "not S2", first: 5, codec: 1, data: []byte("<message/>")},
		{name: "truncated block", first: 5, codec: 1, data: valid[:len(valid)-1]},
		{name: "one entry", first: 5, codec: 1, data: raw([]byte{1, 0, 2}, []byte("ab"))},
		{name: "count beyond the data", first: 5, codec: 1, data: raw([]byte{9, 0, 1, 1, 1}, []byte("ab"))},
		{name: "first seq not the key", first: 5, codec: 1, data: raw([]byte{2, 1, 1, 2, 1}, []byte("ab"))},
		{name: "seqs not ascending", first: 5, codec: 1, data: raw([]byte{2, 0, 1, 0, 1}, []byte("ab"))},
		{name: "empty body", first: 5, codec: 1, data: raw([]byte{2, 0, 0, 1, 2}, []byte("ab"))},
		{name: "lengths short of the data", first: 5, codec: 1, data: raw([]byte{2, 0, 1, 1, 1}, []byte("abc"))},
		{name: "lengths beyond the data", first: 5, codec: 1, data: raw([]byte{2, 0, 2, 1, 2}, []byte("abc"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := decodePack(tt.first, tt.codec, tt.data); !errors.Is(err, errCorruptPack) {
				t.Errorf("decodePack = %+v, %v; want errCorruptPack", p, err)
			}
		})
	}
	if _, err := decodePack(5, packCodecS2, valid); err != nil {
		t.Errorf("the valid pack: %v", err)
	}
}

// FuzzDecodePack: a pack read from a damaged or tampered database decodes
// or fails with errCorruptPack, never panics, and whatever decodes holds
// ascending seqs from the key and non-empty bodies.
func FuzzDecodePack(f *testing.F) {
	valid, _ := encodePack(nil, nil, []int64{5, 6, 9}, [][]byte{[]byte("<a/>"), []byte("<b/>"), []byte("<c/>")})
	f.Add(int64(5), valid)
	f.Add(int64(1), s2.Encode(nil, []byte{2, 0, 1, 1, 1, 'x', 'y'}))
	f.Add(int64(1), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, first int64, data []byte) {
		p, err := decodePack(first, packCodecS2, data)
		if err != nil {
			if !errors.Is(err, errCorruptPack) {
				t.Fatalf("error %v is not errCorruptPack", err)
			}
			return
		}
		if len(p.seqs) < 2 || p.seqs[0] != first {
			t.Fatalf("seqs %v from key %d", p.seqs, first)
		}
		for i, seq := range p.seqs {
			if i > 0 && seq <= p.seqs[i-1] {
				t.Fatalf("seqs %v not ascending", p.seqs)
			}
			if b, ok := p.body(seq); !ok || len(b) == 0 {
				t.Fatalf("body(%d) = %q, %v", seq, b, ok)
			}
		}
	})
}

// packKeys returns, by seq, the pack holding each journal row's bytes (0:
// inline), and the keys of the stored packs.
func packKeys(t *testing.T, s *Store) (map[int64]int64, []int64) {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT seq, coalesce(pack, 0) FROM journal ORDER BY seq`)
	must(t, err)
	defer rows.Close()
	byRow := map[int64]int64{}
	for rows.Next() {
		var seq, pack int64
		must(t, rows.Scan(&seq, &pack))
		byRow[seq] = pack
	}
	must(t, rows.Err())
	var keys []int64
	packs, err := s.rdb.Query(`SELECT first_seq FROM journal_packs ORDER BY first_seq`)
	must(t, err)
	defer packs.Close()
	for packs.Next() {
		var k int64
		must(t, packs.Scan(&k))
		keys = append(keys, k)
	}
	return byRow, keys
}

// TestPacksGroupAndFollowRetention: one batch packs each listener's
// messages apart from its other kinds and keeps a lone entry inline; reads
// return every entry's bytes; a sweep deletes a pack with its last row and
// not before, and refuses to delete a pack a row still uses.
func TestPacksGroupAndFollowRetention(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTest(t, Options{Clock: clock.Now, BatchRows: 100000, BatchDelay: time.Hour})
	ctx := context.Background()
	type add struct {
		listener string
		kind     Kind
	}
	adds := []add{ // seqs 1..7
		{"tool", Message}, {"keeper", Message}, {"tool", Message}, {"tool", Huh},
		{"keeper", Message}, {"tool", Huh}, {"lone", Message},
	}
	var want []Entry
	for i, a := range adds {
		e := testEntry(i, fmt.Sprintf("t%d", i))
		e.Listener, e.Kind = a.listener, a.kind
		seq, err := s.AppendSeq(e)
		must(t, err)
		e.Seq, e.Time, e.SHA256 = seq, clock.Now().UTC(), sha256Of(e.Bytes)
		want = append(want, e)
	}
	flush(t, s)
	byRow, keys := packKeys(t, s)
	if d := cmp.Diff(map[int64]int64{1: 1, 2: 2, 3: 1, 4: 4, 5: 2, 6: 4, 7: 0}, byRow); d != "" {
		t.Fatalf("packs by row (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{1, 2, 4}, keys); d != "" {
		t.Fatalf("pack keys (-want +got):\n%s", d)
	}
	got, err := s.After(0, 100)
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("After (-want +got):\n%s", d)
	}
	thread, err := s.Thread("t5")
	must(t, err)
	if len(thread) != 1 || !bytes.Equal(thread[0].Bytes, want[5].Bytes) {
		t.Fatalf("Thread(t5) = %+v", thread)
	}

	policy := func(l string) Retention {
		if l == "tool" {
			return Retention{Policy: PruneOnDelivery}
		}
		return Retention{}
	}
	// Seq 1 delivered: pack 1 keeps seq 3's bytes.
	must(t, s.MarkDelivered(1))
	flush(t, s)
	_, err = s.Sweep(ctx, policy)
	must(t, err)
	if _, keys := packKeys(t, s); !cmp.Equal([]int64{1, 2, 4}, keys) {
		t.Fatalf("after pruning seq 1 packs = %v, want all three", keys)
	}
	got, err = s.After(2, 1)
	must(t, err)
	if len(got) != 1 || !bytes.Equal(got[0].Bytes, want[2].Bytes) {
		t.Fatalf("seq 3 after its packmate went: %+v", got)
	}
	// Seq 3 delivered too: pack 1 goes with it; the huhs' pack stays.
	must(t, s.MarkDelivered(3))
	flush(t, s)
	_, err = s.Sweep(ctx, policy)
	must(t, err)
	if _, keys := packKeys(t, s); !cmp.Equal([]int64{2, 4}, keys) {
		t.Fatalf("after pruning seqs 1 and 3 packs = %v, want [2 4]", keys)
	}
	rep, err := s.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Verify: %v", rep.Faults)
	}
	if _, err := s.do(ctx, "delete a used pack", func(w *writer) (int64, error) {
		return w.exec(`DELETE FROM journal_packs WHERE first_seq = 2`)
	}); err == nil {
		t.Error("a pack rows still use was deleted")
	}
}
