package stage

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// c14nMaxDepth bounds the element nesting isExcC14N follows. libxml2 without
// XML_PARSE_HUGE refuses an element opened inside 257 open ones ("Excessive
// depth in document: 256"), so no document the strict parse accepts is refused
// for depth.
const c14nMaxDepth = 257

// c14nMaxNS bounds the namespace declarations in scope at once (the sum over
// the open elements); a document with more is simply not proven canonical.
const c14nMaxNS = 32

// xmlNamespace is the namespace of the xml: prefix, the sort key of xml:*
// attributes in canonical attribute order.
var xmlNamespace = []byte("http://www.w3.org/XML/1998/namespace")

// xmlnsNamespace is the namespace name reserved for xmlns declarations.
var xmlnsNamespace = []byte("http://www.w3.org/2000/xmlns/")

// c14nSpan is a half-open byte range of the scanned document.
type c14nSpan struct{ off, end int32 }

// c14nBinding is one namespace declaration in scope: a prefix (empty for the
// default namespace), its URI (empty for xmlns="") and the depth of the
// element that declares it.
type c14nBinding struct {
	prefix, uri c14nSpan
	depth       int32
}

// Byte classes, indexed by byte so the hot loops need no bounds checks:
//   - textPlain: bytes that stand for themselves in canonical character data
//     (printable ASCII but '<', '&', '>'; tab; newline);
//   - attrPlain: the same in canonical attribute values (printable ASCII but
//     '<', '&', '"');
//   - nameByte, nameStart: bytes of a (qualified) name, and those that may
//     start a name or a local part. Bytes from 0x80 up are allowed in both:
//     they must form valid UTF-8, and the strict parse has already checked the
//     characters against XML's name productions;
//   - uriPlain: bytes taken as they are in a namespace URI after the scheme:
//     RFC 3986's unreserved and reserved characters except '&' (libxml2 prints
//     namespace URIs unescaped, so a reference never round-trips), the
//     apostrophe and the brackets, and except '%' and '#', which are checked
//     apart.
var textPlain, attrPlain, nameByte, nameStart, uriPlain = func() (text, attr, name, first, uri [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		text[c] = c != '<' && c != '&' && c != '>'
		attr[c] = c != '<' && c != '&' && c != '"'
	}
	text['\t'], text['\n'] = true, true
	for c := 'a'; c <= 'z'; c++ {
		for _, t := range []*[256]bool{&name, &first, &uri} {
			t[c], t[c-'a'+'A'] = true, true
		}
	}
	for c := '0'; c <= '9'; c++ {
		name[c], uri[c] = true, true
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		name[c], first[c] = true, true
	}
	name['_'], first['_'] = true, true
	name['-'], name['.'], name[':'] = true, true, true
	for _, c := range "-._~:/?@!$()*+,;=" {
		uri[c] = true
	}
	return text, attr, name, first, uri
}()

// isExcC14N reports whether raw is already its own exclusive C14N 1.0 without
// comments: for bytes that libxml2 parsed strictly (lx.OptNoNet|lx.OptNoBlanks,
// no severe error, no DTD — parseOrRepair's strict path), true means that
// doc.C14N(lx.Node{}, lx.C14NExc10, false, nil) of that document is
// byte-identical to raw, so the C14N pass can be skipped.
//
// It is conservative: false only means "not proven", and the caller then runs
// libxml2's C14N. It is a single forward scan that does not allocate, and accepts
// exactly this shape:
//   - raw is the root element and nothing else: no XML declaration, BOM,
//     processing instruction, comment, CDATA section, DOCTYPE or whitespace
//     anywhere outside text, and no empty-element tag;
//   - tags are `<qname` (` attr="value"`)* `>` and `</qname>`, with single
//     spaces, double quotes and nothing around '=';
//   - text has no literal '>' or '\r', its only references are &amp; &lt; &gt;
//     &#xD;, and no text run between two tags is whitespace only (NOBLANKS may
//     have dropped it); attribute values have no literal '<', tab, newline or
//     '\r', and their only references are &amp; &lt; &quot; &#x9; &#xA; &#xD;;
//   - namespace declarations come first, the default one first and the others
//     sorted by prefix. Each is one exclusive C14N renders there: visibly
//     utilized by the element (its prefix, or an attribute's; a default
//     declaration only on an unprefixed element) and not already rendered with
//     the same URI by the nearest output ancestor. xmlns="" therefore appears
//     only on an unprefixed element inside a non-empty default namespace.
//     URIs must be absolute (a scheme, then ASCII URI characters without '&');
//     prefixes must be in scope; xmlns:xml, xml:-prefixed elements, p:xmlns
//     attributes and the reserved xml/xmlns namespace names are refused;
//   - the attributes follow, unqualified ones first sorted by name, then the
//     qualified ones sorted by (namespace URI, local name); xml:* attributes
//     sort by the XML namespace URI.
func isExcC14N(raw []byte) bool {
	if len(raw) == 0 || len(raw) > 1<<31-1 || raw[0] != '<' {
		return false
	}
	var (
		open  [c14nMaxDepth]int32    // where the open elements' names start
		scope [c14nMaxNS]c14nBinding // declarations of the open elements
		depth int                    // open elements
		nb    int                    // bindings in scope
	)
	// lookup returns the index of the binding of prefix among the first below
	// ones (-1 when unbound) and its URI.
	lookup := func(prefix []byte, below int) (int, []byte) {
		for k := below - 1; k >= 0; k-- {
			b := scope[k]
			if string(raw[b.prefix.off:b.prefix.end]) == string(prefix) {
				return k, raw[b.uri.off:b.uri.end]
			}
		}
		return -1, nil
	}
	i := 0
	for {
		// raw[i] == '<': a start or an end tag.
		if i+1 < len(raw) && raw[i+1] == '/' {
			if depth == 0 {
				return false
			}
			depth--
			// The name must repeat the start tag's, which ends at ' ' or '>'.
			i += 2
			j := int(open[depth])
			for i < len(raw) && nameByte[raw[i]] {
				if raw[i] != raw[j] {
					return false
				}
				i++
				j++
			}
			if i >= len(raw) || raw[i] != '>' || (raw[j] != ' ' && raw[j] != '>') {
				return false
			}
			i++
			for nb > 0 && int(scope[nb-1].depth) > depth {
				nb--
			}
			if depth == 0 {
				return i == len(raw)
			}
		} else {
			if depth == c14nMaxDepth {
				return false
			}
			i++
			colon, end := scanQName(raw, i)
			if end < 0 {
				return false
			}
			var prefix []byte
			if colon >= 0 {
				prefix = raw[i:colon]
				if string(prefix) == "xml" || string(prefix) == "xmlns" {
					return false
				}
			}
			open[depth] = int32(i)
			depth++
			i = end
			base := nb      // this element's declarations are scope[base:nb]
			var used uint32 // bit k: scope[base+k] is visibly utilized here
			const (
				inDecls = iota
				inPlain
				inQualified
			)
			phase := inDecls
			var prevName, prevURI []byte
			for i < len(raw) && raw[i] == ' ' {
				i++
				acolon, aend := scanQName(raw, i)
				if aend < 0 || aend+1 >= len(raw) || raw[aend] != '=' || raw[aend+1] != '"' {
					return false
				}
				qname, v := raw[i:aend], aend+2
				switch {
				case string(qname) == "xmlns" || (acolon >= 0 && string(raw[i:acolon]) == "xmlns"):
					pstart := aend // the default namespace's prefix is empty
					if acolon >= 0 {
						pstart = acolon + 1
					}
					p := raw[pstart:aend]
					if string(p) == "xml" || string(p) == "xmlns" || phase != inDecls || nb == c14nMaxNS {
						return false
					}
					// Declarations are sorted by prefix, the default one (the
					// empty prefix) first.
					if nb > base {
						prev := scope[nb-1].prefix
						if bytes.Compare(raw[prev.off:prev.end], p) >= 0 {
							return false
						}
					}
					vend := scanNamespaceURI(raw, v)
					if vend < 0 || (vend == v && len(p) > 0) {
						return false
					}
					uri := raw[v:vend]
					if bytes.Equal(uri, xmlNamespace) || bytes.Equal(uri, xmlnsNamespace) {
						return false
					}
					scope[nb] = c14nBinding{
						prefix: c14nSpan{int32(pstart), int32(aend)},
						uri:    c14nSpan{int32(v), int32(vend)},
						depth:  int32(depth),
					}
					nb++
					i = vend + 1
					continue
				case acolon < 0:
					if phase == inQualified || (phase == inPlain && bytes.Compare(prevName, qname) >= 0) {
						return false
					}
					phase, prevName = inPlain, qname
				default:
					local := raw[acolon+1 : aend]
					if string(local) == "xmlns" {
						return false
					}
					uri := xmlNamespace
					if p := raw[i:acolon]; string(p) != "xml" {
						k, u := lookup(p, nb)
						if k < 0 {
							return false
						}
						if k >= base {
							used |= 1 << (k - base)
						}
						uri = u
					}
					if phase == inQualified {
						if c := bytes.Compare(prevURI, uri); c > 0 || (c == 0 && bytes.Compare(prevName, local) >= 0) {
							return false
						}
					}
					phase, prevURI, prevName = inQualified, uri, local
				}
				vend := scanAttrValue(raw, v)
				if vend < 0 {
					return false
				}
				i = vend + 1
			}
			if i >= len(raw) || raw[i] != '>' {
				return false
			}
			i++
			// The element's own namespace: an unprefixed element utilizes a
			// default declaration made on it; a prefixed one needs its prefix
			// in scope.
			if prefix != nil {
				k, _ := lookup(prefix, nb)
				if k < 0 {
					return false
				}
				if k >= base {
					used |= 1 << (k - base)
				}
			} else if nb > base && scope[base].prefix.off == scope[base].prefix.end {
				used |= 1
			}
			// Every declaration made here must be one exclusive C14N renders
			// here: utilized, and not what the output ancestors rendered (in
			// a document that passed this far, the declarations in scope are
			// exactly what was rendered; no declaration means the empty URI).
			for k := base; k < nb; k++ {
				if used&(1<<(k-base)) == 0 {
					return false
				}
				b := scope[k]
				_, outer := lookup(raw[b.prefix.off:b.prefix.end], base)
				if string(outer) == string(raw[b.uri.off:b.uri.end]) {
					return false
				}
			}
		}
		// Character data up to the next tag.
		start, plain := i, true
		for {
			i = skipText(raw, i)
			if i >= len(raw) {
				return false
			}
			c := raw[i]
			if c == '<' {
				break
			}
			l := 0
			if c == '&' {
				l = textRef(raw[i:])
			} else if c >= utf8.RuneSelf {
				l = xmlCharLen(raw[i:])
			}
			if l == 0 {
				return false
			}
			plain = false
			i += l
		}
		if plain && isBlank(raw[start:i]) {
			return false
		}
	}
}

// skipText returns the index of the first byte from raw[i] on that is not
// textPlain, or len(raw). It goes eight bytes at a time while no byte of the
// word is a stop candidate (from 0x80 up, below 0x20, '<', '>', '&'); a word
// with one (tab and newline included) is finished byte by byte.
func skipText(raw []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for {
		for i+8 <= len(raw) {
			x := binary.LittleEndian.Uint64(raw[i:])
			// (v-ones)&^v has a byte's high bit set for some byte iff v has
			// a zero byte; x-0x20*ones likewise for a byte below 0x20. y is
			// zero where x is '<' or '>' (0x3C, 0x3E), z where it is '&'.
			y := (x ^ '<'*ones) & (0xFD * ones)
			z := x ^ '&'*ones
			if (x|(x-0x20*ones)&^x|(y-ones)&^y|(z-ones)&^z)&highs != 0 {
				break
			}
			i += 8
		}
		end := min(i+8, len(raw))
		for i < end && textPlain[raw[i]] {
			i++
		}
		if i < end || i == len(raw) {
			return i
		}
	}
}

// isBlank reports whether b is a non-empty run of spaces, tabs and newlines.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' {
			return false
		}
	}
	return len(b) > 0
}

// scanQName scans a name starting at raw[i]: an NCName, or NCName ':' NCName.
// It returns the colon's index (-1 for none) and the index just past the name,
// or end -1 when there is no well-shaped name at i.
func scanQName(raw []byte, i int) (colon, end int) {
	start, colon := i, -1
	var high byte
	for i < len(raw) && nameByte[raw[i]] {
		if raw[i] == ':' {
			if colon >= 0 {
				return -1, -1
			}
			colon = i
		}
		high |= raw[i]
		i++
	}
	if i == start || !nameStart[raw[start]] || (colon >= 0 && (colon+1 == i || !nameStart[raw[colon+1]])) {
		return -1, -1
	}
	if high >= utf8.RuneSelf {
		for j := start; j < i; {
			if raw[j] < utf8.RuneSelf {
				j++
				continue
			}
			l := xmlCharLen(raw[j:i])
			if l == 0 {
				return -1, -1
			}
			j += l
		}
	}
	return colon, i
}

// scanAttrValue scans a canonical attribute value starting at raw[i] and
// returns the index of its closing '"', or -1.
func scanAttrValue(raw []byte, i int) int {
	for {
		for i < len(raw) && attrPlain[raw[i]] {
			i++
		}
		if i >= len(raw) {
			return -1
		}
		l := 0
		switch c := raw[i]; {
		case c == '"':
			return i
		case c == '&':
			l = attrRef(raw[i:])
		case c >= utf8.RuneSelf:
			l = xmlCharLen(raw[i:])
		}
		if l == 0 {
			return -1
		}
		i += l
	}
}

// scanNamespaceURI scans a namespace declaration's value starting at raw[i]
// and returns the index of its closing '"', or -1. The value is empty or an
// absolute URI: a scheme (a letter, then letters, digits, '+', '-', '.'), ':',
// then uriPlain bytes, '%' followed by two hex digits, and at most one '#'.
func scanNamespaceURI(raw []byte, i int) int {
	if i < len(raw) && raw[i] == '"' {
		return i
	}
	j := i
	for j < len(raw) && (isASCIILetter(raw[j]) || (j > i && (isDigit(raw[j]) || raw[j] == '+' || raw[j] == '-' || raw[j] == '.'))) {
		j++
	}
	if j == i || j >= len(raw) || raw[j] != ':' {
		return -1
	}
	fragment := false
	for {
		for j < len(raw) && uriPlain[raw[j]] {
			j++
		}
		if j >= len(raw) {
			return -1
		}
		switch raw[j] {
		case '"':
			return j
		case '%':
			if j+2 >= len(raw) || !isHex(raw[j+1]) || !isHex(raw[j+2]) {
				return -1
			}
			j += 3
		case '#':
			if fragment {
				return -1
			}
			fragment = true
			j++
		default:
			return -1
		}
	}
}

// textRef returns the length of the canonical reference b starts with in
// character data, or 0.
func textRef(b []byte) int {
	for _, r := range [...]string{"&amp;", "&lt;", "&gt;", "&#xD;"} {
		if len(b) >= len(r) && string(b[:len(r)]) == r {
			return len(r)
		}
	}
	return 0
}

// attrRef returns the length of the canonical reference b starts with in an
// attribute value, or 0.
func attrRef(b []byte) int {
	for _, r := range [...]string{"&amp;", "&lt;", "&quot;", "&#x9;", "&#xA;", "&#xD;"} {
		if len(b) >= len(r) && string(b[:len(r)]) == r {
			return len(r)
		}
	}
	return 0
}

// xmlCharLen returns the length of the multi-byte UTF-8 character b starts
// with, or 0 when it is invalid UTF-8 or not an XML character (U+FFFE, U+FFFF).
func xmlCharLen(b []byte) int {
	r, l := utf8.DecodeRune(b)
	if r == utf8.RuneError && l == 1 || r == 0xFFFE || r == 0xFFFF {
		return 0
	}
	return l
}

// isASCIILetter reports whether c is A–Z or a–z.
func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// isDigit reports whether c is 0–9.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// IsExcC14N reports whether raw is proven to be its own exclusive C14N 1.0
// without comments, as the ingress stages prove it before skipping their
// C14N pass (false only means "not proven"). The proof covers the markup:
// tags, attributes, namespace declarations, references and their order. It
// takes for granted what a strict parse checks first — valid UTF-8 and
// names of XML's name productions — so a caller that never parsed raw
// must check what it relies on of those itself.
func IsExcC14N(raw []byte) bool { return isExcC14N(raw) }
