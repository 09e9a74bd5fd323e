package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/klauspost/compress/s2"
)

// segmentCodecS2 is the only segment codec: the encoded segment
// (encodeSegment) as one S2 block.
const segmentCodecS2 = 2

// segmentMaxRaw bounds the bodies one segment holds (a single larger entry
// gets a segment of its own), and so what reading one entry decodes.
const segmentMaxRaw = 64 << 10

// segmentMaxDecoded bounds what decodeSegment allocates for a (corrupt)
// segment claiming a larger size.
const segmentMaxDecoded = 64 << 20

// segmentStrings is the number of text fields an encoded entry carries.
const segmentStrings = 7

// errCorruptSegment reports a journal segment that does not decode.
var errCorruptSegment = errors.New("corrupt journal segment")

// segmentEncoder encodes segments, reusing its scratch space.
type segmentEncoder struct {
	raw []byte
}

// encode appends to dst the S2 block of a segment holding entries (seqs
// ascending, all within the segment's range starting at first).
//
// The uncompressed form is: uvarint count; per entry, uvarint seq − first,
// zigzag varint time − the previous entry's time (the first entry's: − 0),
// one byte direction<<4 | kind, seven texts (thread, conversation, from, to,
// listener, payload tag, diagnostics) each as uvarint length and bytes, the
// 32-byte SHA-256 and the uvarint length of the bytes; then the bytes of
// every entry, concatenated.
func (enc *segmentEncoder) encode(dst []byte, first int64, entries []*Entry) []byte {
	raw := binary.AppendUvarint(enc.raw[:0], uint64(len(entries)))
	var prev int64
	for _, e := range entries {
		ns := e.Time.UnixNano()
		raw = binary.AppendUvarint(raw, uint64(e.Seq-first))
		raw = binary.AppendVarint(raw, ns-prev)
		prev = ns
		raw = append(raw, byte(e.Direction)<<4|byte(e.Kind)&0x0f)
		for _, s := range [segmentStrings]string{e.Thread, e.Conversation, e.From, e.To, e.Listener, e.PayloadTag, e.Diagnostics} {
			raw = binary.AppendUvarint(raw, uint64(len(s)))
			raw = append(raw, s...)
		}
		raw = append(raw, e.SHA256[:]...)
		raw = binary.AppendUvarint(raw, uint64(len(e.Bytes)))
	}
	for _, e := range entries {
		raw = append(raw, e.Bytes...)
	}
	enc.raw = raw
	return s2.Encode(dst[:0], raw)
}

// segment is a decoded journal segment: its key and range and the entries
// it holds, in seq order. The entries' texts share one string and their
// bytes one buffer.
type segment struct {
	first, last int64
	entries     []Entry
}

// find returns the index of entry seq, or false if the segment does not
// hold it.
func (s *segment) find(seq int64) (int, bool) {
	lo, hi := 0, len(s.entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.entries[m].Seq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(s.entries) && s.entries[lo].Seq == seq
}

// decodeSegment decodes the segment stored under key first, covering seqs
// first..last, holding count entries, in codec codec. It rejects anything
// encode would not produce: a range that is empty or starts below 1, an
// unknown codec, a bad block, a count that differs, seqs out of order or out
// of range, empty bytes and lengths that do not add up. Direction and kind
// values are kept as stored (Verify reports invalid ones).
func decodeSegment(first, last, count, codec int64, data []byte) (*segment, error) {
	bad := func(what string) error { return fmt.Errorf("%w %d: %s", errCorruptSegment, first, what) }
	if first < 1 || last < first {
		return nil, bad(fmt.Sprintf("bad range %d..%d", first, last))
	}
	if codec != segmentCodecS2 {
		return nil, bad(fmt.Sprintf("unknown codec %d", codec))
	}
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, fmt.Errorf("%w %d: %w", errCorruptSegment, first, err)
	}
	if n > segmentMaxDecoded {
		return nil, bad(fmt.Sprintf("claims %d bytes", n))
	}
	raw, err := s2.Decode(make([]byte, n), data)
	if err != nil {
		return nil, fmt.Errorf("%w %d: %w", errCorruptSegment, first, err)
	}
	d := segmentDecoder{raw: raw}
	stored := d.uvarint()
	// Every entry takes at least 43 header bytes and one body byte.
	if d.err != nil || stored == 0 || stored != uint64(count) || stored > uint64(len(raw))/44 {
		return nil, bad("bad entry count")
	}
	s := &segment{first: first, last: last, entries: make([]Entry, stored)}
	lens := make([]int, stored)
	// The texts are cut, once the header is read, from one string holding
	// it; until then texts holds their offsets and ends.
	texts := make([][segmentStrings][2]int, stored)
	var prev int64
	for i := range s.entries {
		e := &s.entries[i]
		delta := d.uvarint()
		if d.err != nil || delta > uint64(last-first) {
			return nil, bad("seq out of range")
		}
		e.Seq = first + int64(delta)
		if i > 0 && e.Seq <= s.entries[i-1].Seq {
			return nil, bad("seqs out of order")
		}
		prev += d.varint()
		e.Time = time.Unix(0, prev).UTC()
		dk := d.byte()
		e.Direction, e.Kind = Direction(dk>>4), Kind(dk&0x0f)
		for j := range texts[i] {
			l := d.uvarint()
			if d.err != nil || l > uint64(len(d.raw)-d.off) {
				return nil, bad("bad text length")
			}
			texts[i][j] = [2]int{d.off, d.off + int(l)}
			d.off += int(l)
		}
		sum := d.take(32)
		copy(e.SHA256[:], sum)
		l := d.uvarint()
		if d.err != nil || l == 0 || l > uint64(len(d.raw)) {
			return nil, bad("bad body length")
		}
		lens[i] = int(l)
	}
	if d.err != nil {
		return nil, bad("truncated header")
	}
	header := string(raw[:d.off])
	for i := range s.entries {
		t, e := &texts[i], &s.entries[i]
		e.Thread, e.Conversation, e.From, e.To = header[t[0][0]:t[0][1]], header[t[1][0]:t[1][1]],
			header[t[2][0]:t[2][1]], header[t[3][0]:t[3][1]]
		e.Listener, e.PayloadTag, e.Diagnostics = header[t[4][0]:t[4][1]], header[t[5][0]:t[5][1]],
			header[t[6][0]:t[6][1]]
	}
	body := raw[d.off:]
	total := 0
	for _, l := range lens {
		total += l
	}
	if total != len(body) {
		return nil, bad("body lengths do not match the data")
	}
	for i, l := range lens {
		s.entries[i].Bytes = body[:l:l]
		body = body[l:]
	}
	return s, nil
}

// segmentDecoder reads the header of a decoded segment; the first failure
// sticks in err.
type segmentDecoder struct {
	raw []byte
	off int
	err error
}

// errTruncated is a segment header that ends early.
var errTruncated = errors.New("truncated")

// uvarint reads an unsigned varint.
func (d *segmentDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.raw[d.off:])
	if k <= 0 {
		d.err = errTruncated
		return 0
	}
	d.off += k
	return v
}

// varint reads a zigzag varint (binary.AppendVarint's encoding).
func (d *segmentDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// byte reads one byte.
func (d *segmentDecoder) byte() byte {
	b := d.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

// take reads n bytes.
func (d *segmentDecoder) take(n int) []byte {
	if d.err != nil || len(d.raw)-d.off < n {
		d.err = errTruncated
		return nil
	}
	b := d.raw[d.off : d.off+n]
	d.off += n
	return b
}
