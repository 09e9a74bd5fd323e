package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

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

// encodePack appends to dst the S2 block of a migration-7 pack holding bodies, the
// canonical bytes of the entries seqs (ascending, seqs[0] being the pack's
// key). raw is scratch space for the uncompressed form; both are returned
// for reuse.
//
// The uncompressed form is: uvarint count; per entry, uvarint seq −
// seqs[0] and uvarint length; then the bodies, concatenated.
func encodePack(dst, raw []byte, seqs []int64, bodies [][]byte) (block, scratch []byte) {
	raw = binary.AppendUvarint(raw[:0], uint64(len(seqs)))
	for i, seq := range seqs {
		raw = binary.AppendUvarint(raw, uint64(seq-seqs[0]))
		raw = binary.AppendUvarint(raw, uint64(len(bodies[i])))
	}
	for _, b := range bodies {
		raw = append(raw, b...)
	}
	return s2.Encode(dst[:0], raw), raw
}
