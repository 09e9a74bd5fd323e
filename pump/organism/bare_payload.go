package organism

import "bytes"

// emptyXMLNS is the namespace undeclaration a payload in no namespace
// carries inside an envelope (so it does not inherit the envelope's).
var emptyXMLNS = []byte(` xmlns=""`)

// barePayload is payload XML as a person reads it: without the xmlns="" on
// its root element, which only means something inside an envelope. It
// returns a copy when it removes it, so p (often a slice of a journaled
// envelope) is never written to.
func barePayload(p []byte) []byte {
	end := bytes.IndexByte(p, '>')
	if end <= 0 {
		return p
	}
	i := bytes.Index(p[:end], emptyXMLNS)
	if i <= 0 {
		return p
	}
	out := make([]byte, 0, len(p)-len(emptyXMLNS))
	out = append(out, p[:i]...)
	return append(out, p[i+len(emptyXMLNS):]...)
}
