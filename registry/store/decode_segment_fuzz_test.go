package store

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/s2"
)

// fuzzSeedEntries is how many entries of a fixture segment a seed keeps:
// the fixture's segments (about 12 KiB each) made every input the fuzzer
// found interesting cost its whole minimization time (60 s), so a run did
// a handful of execs.
const fuzzSeedEntries = 2

// fuzzSeedBytes caps the bytes of a seed's entry, for the same reason.
const fuzzSeedBytes = 48

// encodeSegment is decodeSegment's inverse: es (ascending seqs from first,
// bytes not empty) in the legacy segment form, uncompressed.
func encodeSegment(first int64, es []Entry) []byte {
	b := binary.AppendUvarint(nil, uint64(len(es)))
	var prev int64
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(e.Seq-first))
		b = binary.AppendVarint(b, e.Time.UnixNano()-prev)
		prev = e.Time.UnixNano()
		b = append(b, byte(e.Direction)<<4|byte(e.Kind)&0x0f)
		for _, s := range [segmentStrings]string{e.Thread, e.Conversation, e.From, e.To, e.Listener, e.PayloadTag, e.Diagnostics} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		b = append(b, e.SHA256[:]...)
		b = binary.AppendUvarint(b, uint64(len(e.Bytes)))
	}
	for _, e := range es {
		b = append(b, e.Bytes...)
	}
	return b
}

// FuzzDecodeSegment: a legacy segment read from a damaged or tampered
// database decodes or fails with errCorruptSegment, never panics, and
// whatever decodes holds the stated count of ascending seqs in range, with
// bytes. When raw is true, data is the uncompressed form, compressed
// before decoding: mutations of compressed bytes seldom get past the S2
// block, so these reach the header and entry parsing.
func FuzzDecodeSegment(f *testing.F) {
	for _, r := range legacySegmentRows(f) {
		first, last, data := r[0].(int64), r[1].(int64), r[3].([]byte)
		s, err := decodeSegment(first, last, r[2].(int64), segmentCodecS2, data)
		if err != nil {
			f.Fatalf("the fixture's segment %d: %v", first, err)
		}
		es := s.entries[:min(len(s.entries), fuzzSeedEntries)]
		for i := range es {
			es[i].Bytes = es[i].Bytes[:min(len(es[i].Bytes), fuzzSeedBytes)]
		}
		raw := encodeSegment(first, es)
		small := s2.Encode(nil, raw)
		if _, err := decodeSegment(first, last, int64(len(es)), segmentCodecS2, small); err != nil {
			f.Fatalf("the fixture's segment %d cut to %d entries: %v", first, len(es), err)
		}
		f.Add(first, last, int64(len(es)), small, false)
		f.Add(first, last, int64(len(es)), small[:len(small)/2], false)
		f.Add(first, last, int64(len(es)), raw, true)
	}
	f.Add(int64(1), int64(9), int64(2), []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, false)
	f.Fuzz(func(t *testing.T, first, last, n int64, data []byte, raw bool) {
		if raw {
			data = s2.Encode(nil, data)
		}
		s, err := decodeSegment(first, last, n, segmentCodecS2, data)
		if err != nil {
			if !errors.Is(err, errCorruptSegment) {
				t.Fatalf("error %v is not errCorruptSegment", err)
			}
			return
		}
		if int64(len(s.entries)) != n {
			t.Fatalf("%d entries, row says %d", len(s.entries), n)
		}
		for i, e := range s.entries {
			if e.Seq < first || e.Seq > last || (i > 0 && e.Seq <= s.entries[i-1].Seq) || len(e.Bytes) == 0 {
				t.Fatalf("entry %d: seq %d in %d..%d, %d bytes", i, e.Seq, first, last, len(e.Bytes))
			}
		}
	})
}
