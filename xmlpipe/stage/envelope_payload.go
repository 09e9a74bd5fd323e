package stage

import "bytes"

// EnvelopePayload returns the payload element of a canonical envelope as the
// envelope holds it (a payload in no namespace keeps the xmlns="" it needs
// only inside the envelope): the root's second element child, up to the
// root's end tag, whatever the root's prefix — "</message>", or
// "</ns0:message>" in an envelope as Python's ElementTree writes one. It is
// a slice of env. ok is false when env has no such child (not an envelope:
// a failed message's raw bytes, a synthesized record).
//
// Every reader of journaled or delivered envelopes finds the payload with
// it, so they all agree; the journal view's payload column
// (registry/store) is the same cut in SQL.
func EnvelopePayload(env []byte) (payload []byte, ok bool) {
	start, end := payloadOffset(env), payloadEnd(env)
	if start < 0 || end <= start {
		return nil, false
	}
	return env[start:end], true
}

// payloadOffset finds where the payload element starts in a canonical envelope:
// the second element child of the root (after <meta>). Canonical XML makes a
// tag scan exact: '<' only ever opens a tag or a processing instruction (text
// and attribute values carry &lt;), there are no comments, CDATA sections or
// empty-element tags. It returns -1 if the shape is not found.
func payloadOffset(c []byte) int {
	depth, children := 0, 0
	for i := 0; i < len(c); i++ {
		if c[i] != '<' {
			continue
		}
		switch {
		case i+1 < len(c) && c[i+1] == '?':
			j := bytes.Index(c[i:], []byte("?>"))
			if j < 0 {
				return -1
			}
			i += j + 1
		case i+1 < len(c) && c[i+1] == '/':
			depth--
		default:
			if depth == 1 {
				children++
				if children == 2 {
					return i
				}
			}
			depth++
		}
	}
	return -1
}

// payloadEnd finds where the payload element ends in a canonical envelope:
// at the root's end tag ("</" and the root's name as its start tag writes it,
// the last of its occurrences), less any whitespace before it — the payload
// is the root's last child. It returns -1 if the shape is not found.
func payloadEnd(c []byte) int {
	i := 0
	for i < len(c) && (c[i] != '<' || i+1 < len(c) && c[i+1] == '?') {
		if c[i] == '<' { // a processing instruction before the root
			j := bytes.Index(c[i:], []byte("?>"))
			if j < 0 {
				return -1
			}
			i += j + 2
			continue
		}
		i++
	}
	n := bytes.IndexAny(c[min(i+1, len(c)):], " >")
	if i >= len(c) || n <= 0 {
		return -1
	}
	name := c[i+1 : i+1+n]
	end := bytes.LastIndex(c, name)
	if end < i+2+n || c[end-2] != '<' || c[end-1] != '/' || end+n >= len(c) || c[end+n] != '>' {
		return -1
	}
	end -= 2
	for isSpace(c[end-1]) {
		end--
	}
	return end
}
