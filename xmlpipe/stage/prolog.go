package stage

import "bytes"

// hasDoctype reports whether the document prolog declares a DOCTYPE. A DOCTYPE
// can only appear before the root element, so the scan stops at the first start
// tag; it skips the XML declaration, processing instructions, comments and
// whitespace. Rejecting before parsing means no entity is ever declared.
func hasDoctype(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	for {
		b = bytes.TrimLeft(b, " \t\r\n")
		switch {
		case bytes.HasPrefix(b, []byte("<!--")):
			i := bytes.Index(b[4:], []byte("-->"))
			if i < 0 {
				return false
			}
			b = b[4+i+3:]
		case bytes.HasPrefix(b, []byte("<?")):
			i := bytes.Index(b[2:], []byte("?>"))
			if i < 0 {
				return false
			}
			b = b[2+i+2:]
		case bytes.HasPrefix(b, []byte("<!")):
			rest := bytes.ToUpper(b[2:min(len(b), 9)])
			return bytes.HasPrefix(rest, []byte("DOCTYPE"))
		default:
			return false
		}
	}
}
