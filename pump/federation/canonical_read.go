package federation

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/schemas"
)

// readCanonical reads an envelope in exactly the canonical form envsig.Sign
// writes for what build renders — <message xmlns="…"><meta><from>…</from>
// [<to>…</to>]<thread>…</thread><link xmlns="…" …></link><Signature
// xmlns="…">…</Signature></meta>{payload}</message> — by scanning its
// bytes, without encoding/xml. ok is false for anything else (a prefix, an
// element out of that order, a processing instruction, an entity C14N does
// not write, text after the payload…); the caller then decodes it. For
// what it reads it returns what decoding returns (FuzzParse holds it to
// that).
func readCanonical(b []byte) (meta wireMeta, payload []byte, name, ns string, ok bool) {
	r := canonReader{b: b}
	if !r.lit(`<message xmlns="` + schemas.EnvelopeNS + `"><meta><from>`) {
		return meta, nil, "", "", false
	}
	if meta.From, ok = r.textUntil("</from>"); !ok {
		return meta, nil, "", "", false
	}
	if r.lit("<to>") {
		if meta.To, ok = r.textUntil("</to>"); !ok {
			return meta, nil, "", "", false
		}
	}
	if !r.lit("<thread>") {
		return meta, nil, "", "", false
	}
	if meta.Thread, ok = r.textUntil("</thread>"); !ok {
		return meta, nil, "", "", false
	}
	if !r.lit(`<link xmlns="`+NS+`"`) || !r.linkAttrs(&meta.Link) {
		return meta, nil, "", "", false
	}
	const sigStart, sigEnd = `<Signature xmlns="http://www.w3.org/2000/09/xmldsig#">`, "</Signature></meta>"
	if !r.lit(sigStart) {
		return meta, nil, "", "", false
	}
	end := bytes.Index(r.b[r.i:], []byte(sigEnd))
	if end < 0 || bytes.Contains(r.b[r.i:r.i+end], []byte("<?")) {
		return meta, nil, "", "", false
	}
	r.i += end + len(sigEnd)
	start := r.i
	if !r.element() || string(r.b[r.i:]) != "</message>" {
		return meta, nil, "", "", false
	}
	payload = b[start:r.i]
	// The payload's name, unprefixed, and its default namespace when it
	// declares one first (C14N writes namespace declarations first, the
	// default one before the others): what payloadOf reads of it.
	tag := bytes.IndexAny(payload, " >")
	name = string(payload[1:tag])
	if name == "" || strings.ContainsAny(name, ":/") {
		return meta, nil, "", "", false
	}
	const decl = ` xmlns="`
	if bytes.HasPrefix(payload[tag:], []byte(decl)) {
		v := payload[tag+len(decl):]
		if ns, ok = unescapeCanonical(v[:bytes.IndexByte(v, '"')]); !ok {
			return meta, nil, "", "", false
		}
	}
	return meta, payload, name, ns, true
}

// wireMeta is what parse takes from <meta>.
type wireMeta struct {
	From, To, Thread string
	Link             wireLink
}

// wireLink is the <link> element's attributes.
type wireLink struct {
	ID, Kind, Ref, Sent, Error, Trace, Hops, Reason string
}

// canonReader scans canonical XML.
type canonReader struct {
	b []byte
	i int
}

// lit consumes s if the input continues with it.
func (r *canonReader) lit(s string) bool {
	if !bytes.HasPrefix(r.b[r.i:], []byte(s)) {
		return false
	}
	r.i += len(s)
	return true
}

// textUntil reads character data up to end (consumed), unescaped.
func (r *canonReader) textUntil(end string) (string, bool) {
	n := bytes.IndexByte(r.b[r.i:], '<')
	if n < 0 || !bytes.HasPrefix(r.b[r.i+n:], []byte(end)) {
		return "", false
	}
	s, ok := unescapeCanonical(r.b[r.i : r.i+n])
	r.i += n + len(end)
	return s, ok
}

// linkAttrs reads the attributes of <link> and its end ("></link>").
func (r *canonReader) linkAttrs(l *wireLink) bool {
	for {
		if r.lit("></link>") {
			return true
		}
		if !r.lit(" ") {
			return false
		}
		eq := bytes.Index(r.b[r.i:], []byte(`="`))
		if eq < 0 {
			return false
		}
		name := string(r.b[r.i : r.i+eq])
		r.i += eq + 2
		q := bytes.IndexByte(r.b[r.i:], '"')
		if q < 0 {
			return false
		}
		v, ok := unescapeCanonical(r.b[r.i : r.i+q])
		if !ok {
			return false
		}
		r.i += q + 1
		switch name {
		case "id":
			l.ID = v
		case "kind":
			l.Kind = v
		case "ref":
			l.Ref = v
		case "sent":
			l.Sent = v
		case "error":
			l.Error = v
		case "traceparent":
			l.Trace = v
		case "hops":
			l.Hops = v
		case "reason":
			l.Reason = v
		default:
			if strings.ContainsAny(name, ` <>/"'`+"\t\n") || strings.Contains(name, ":") {
				return false // not one plain attribute name: let the decoder judge
			}
		}
	}
}

// element consumes one element (its start tag, content and end tag): in
// canonical XML '<' only opens markup, attribute values are in double
// quotes, every element has an end tag. A processing instruction or any
// other markup gives up.
func (r *canonReader) element() bool {
	depth := 0
	for {
		if r.i >= len(r.b) || r.b[r.i] != '<' {
			n := bytes.IndexByte(r.b[r.i:], '<')
			if n < 0 || depth == 0 {
				return false
			}
			r.i += n
		}
		if r.i+1 >= len(r.b) {
			return false
		}
		switch c := r.b[r.i+1]; {
		case c == '/':
			n := bytes.IndexByte(r.b[r.i:], '>')
			if n < 0 {
				return false
			}
			r.i += n + 1
			if depth--; depth == 0 {
				return true
			}
		case c == '?' || c == '!':
			return false
		default:
			quoted := false
			k := r.i + 1
			for ; k < len(r.b); k++ {
				if r.b[k] == '"' {
					quoted = !quoted
				} else if r.b[k] == '>' && !quoted {
					break
				}
			}
			if k == len(r.b) || r.b[k-1] == '/' {
				return false
			}
			r.i = k + 1
			depth++
		}
	}
}

// unescapeCanonical replaces the references C14N writes (&amp; &lt; &gt;
// &quot; &#x9; &#xA; &#xD;); any other reference, a character XML does not
// allow, and a literal carriage return (which C14N never writes and a
// decoder would turn into a line feed) give up.
func unescapeCanonical(b []byte) (string, bool) {
	for rest := b; len(rest) > 0; {
		r, size := utf8.DecodeRune(rest)
		if r == utf8.RuneError && size <= 1 || !xmlChar(r) || r == '\r' {
			return "", false
		}
		rest = rest[size:]
	}
	return unescapeRefs(b)
}

// xmlChar reports a character XML 1.0 allows.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// unescapeRefs is unescapeCanonical's work once the text is known valid.
func unescapeRefs(b []byte) (string, bool) {
	if bytes.IndexByte(b, '&') < 0 {
		return string(b), true
	}
	var s strings.Builder
	s.Grow(len(b))
	for len(b) > 0 {
		amp := bytes.IndexByte(b, '&')
		if amp < 0 {
			s.Write(b)
			break
		}
		s.Write(b[:amp])
		b = b[amp:]
		semi := bytes.IndexByte(b, ';')
		if semi < 0 {
			return "", false
		}
		switch string(b[:semi+1]) {
		case "&amp;":
			s.WriteByte('&')
		case "&lt;":
			s.WriteByte('<')
		case "&gt;":
			s.WriteByte('>')
		case "&quot;":
			s.WriteByte('"')
		case "&#x9;":
			s.WriteByte('\t')
		case "&#xA;":
			s.WriteByte('\n')
		case "&#xD;":
			s.WriteByte('\r')
		default:
			return "", false
		}
		b = b[semi+1:]
	}
	return s.String(), true
}
