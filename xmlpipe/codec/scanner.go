package codec

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// xsiNamespace is the XML Schema instance namespace; xsi: attributes are
// allowed (and ignored) on any element, as XSD validation allows them.
const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// maxScratch bounds the scratch buffers a pooled scanner keeps between uses.
const maxScratch = 64 << 10

// nsClass classifies a namespace URI relative to the payload being decoded.
type nsClass uint8

const (
	nsPayload nsClass = iota + 1 // the payload's own namespace ("" for none)
	nsXSI                        // the XML Schema instance namespace
	nsOther                      // anything else
)

// binding is one in-scope namespace declaration.
type binding struct {
	prefix []byte // empty for the default namespace
	class  nsClass
	depth  int
}

// rawAttr is one attribute of the current start tag.
type rawAttr struct {
	prefix, local []byte
	value         []byte
	// vs, ve locate the value in the scanner's abuf when inBuf is set (the
	// value needed rewriting); value is filled in when the tag is complete.
	vs, ve int
	inBuf  bool
}

// isDecl reports a namespace declaration (xmlns or xmlns:p).
func (a *rawAttr) isDecl() bool {
	return (len(a.prefix) == 0 && string(a.local) == "xmlns") || string(a.prefix) == "xmlns"
}

// scanner is a strict XML 1.0 + Namespaces pull tokenizer over one payload
// document. It checks the well-formedness of everything it reads (characters,
// references, tag nesting, attribute uniqueness, comment and CDATA syntax),
// normalises line ends and attribute whitespace as a conforming parser does,
// and rejects any DOCTYPE. It knows nothing of the payload's model.
type scanner struct {
	b      []byte
	pos    int
	depth  int
	wantNS string
	tbuf   []byte // scratch for character data that needed rewriting
	abuf   []byte // scratch for attribute values that needed rewriting
	attrs  []rawAttr
	ns     []binding
}

// reset prepares s to scan b, whose payload elements live in namespace ns.
func (s *scanner) reset(b []byte, ns string) {
	s.b, s.pos, s.depth, s.wantNS = b, 0, 0, ns
	s.tbuf, s.abuf, s.attrs, s.ns = s.tbuf[:0], s.abuf[:0], s.attrs[:0], s.ns[:0]
}

// release drops references to the input and oversized scratch buffers.
func (s *scanner) release() {
	s.b = nil
	if cap(s.tbuf) > maxScratch {
		s.tbuf = nil
	}
	if cap(s.abuf) > maxScratch {
		s.abuf = nil
	}
	clear(s.attrs[:cap(s.attrs)])
	clear(s.ns[:cap(s.ns)])
}

// syntaxErr reports malformed input at the current position.
func (s *scanner) syntaxErr(format string, args ...any) error {
	return decodeErr(fmt.Sprintf("malformed XML at byte %d: %s", s.pos, fmt.Sprintf(format, args...)), nil)
}

func (s *scanner) hasPrefix(p string) bool {
	return len(s.b)-s.pos >= len(p) && string(s.b[s.pos:s.pos+len(p)]) == p
}

// skipSpace skips XML whitespace and reports whether there was any.
func (s *scanner) skipSpace() bool {
	start := s.pos
	for s.pos < len(s.b) && isXMLSpace(s.b[s.pos]) {
		s.pos++
	}
	return s.pos > start
}

// prolog skips a BOM, the XML declaration, whitespace, comments and processing
// instructions, and stops at the root start tag.
func (s *scanner) prolog() error {
	if bytes.HasPrefix(s.b, []byte("\xEF\xBB\xBF")) {
		s.pos = 3
	}
	docStart := s.pos
	for {
		s.skipSpace()
		switch {
		case s.pos >= len(s.b):
			return s.syntaxErr("no root element")
		case s.hasPrefix("<?"):
			if err := s.skipPI(s.pos == docStart); err != nil {
				return err
			}
		case s.hasPrefix("<!--"):
			if err := s.skipComment(); err != nil {
				return err
			}
		case s.hasPrefix("<!"):
			return s.syntaxErr("DOCTYPE and other declarations are not allowed")
		case s.b[s.pos] == '<':
			return nil
		default:
			return s.syntaxErr("text before the root element")
		}
	}
}

// epilog accepts only whitespace, comments and processing instructions after
// the root element.
func (s *scanner) epilog() error {
	for {
		s.skipSpace()
		switch {
		case s.pos >= len(s.b):
			return nil
		case s.hasPrefix("<?"):
			if err := s.skipPI(false); err != nil {
				return err
			}
		case s.hasPrefix("<!--"):
			if err := s.skipComment(); err != nil {
				return err
			}
		default:
			return s.syntaxErr("content after the root element")
		}
	}
}

// skipComment skips "<!-- … -->" at s.pos.
func (s *scanner) skipComment() error {
	body := s.pos + 4
	end := bytes.Index(s.b[body:], []byte("--"))
	if end < 0 {
		return s.syntaxErr("unterminated comment")
	}
	end += body
	if end+2 >= len(s.b) || s.b[end+2] != '>' {
		return s.syntaxErr(`"--" inside a comment`)
	}
	if !validChars(s.b[body:end]) {
		return s.syntaxErr("invalid character in a comment")
	}
	s.pos = end + 3
	return nil
}

// skipPI skips "<? … ?>" at s.pos. The target "xml" is the XML declaration,
// allowed only at the very start (atStart).
func (s *scanner) skipPI(atStart bool) error {
	s.pos += 2
	target, err := s.name()
	if err != nil {
		return err
	}
	if bytes.EqualFold(target, []byte("xml")) && (!atStart || string(target) != "xml") {
		return s.syntaxErr("misplaced XML declaration")
	}
	end := bytes.Index(s.b[s.pos:], []byte("?>"))
	if end < 0 {
		return s.syntaxErr("unterminated processing instruction")
	}
	body := s.b[s.pos : s.pos+end]
	if len(body) > 0 && !isXMLSpace(body[0]) {
		return s.syntaxErr("processing instruction target not followed by whitespace")
	}
	if !validChars(body) {
		return s.syntaxErr("invalid character in a processing instruction")
	}
	s.pos += end + 2
	return nil
}

// asciiName classifies ASCII bytes in names: nameStart can begin a name,
// nameRest can only follow.
var asciiName = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == ':':
			t[c] = nameStart
		case c >= '0' && c <= '9', c == '-', c == '.':
			t[c] = nameRest
		}
	}
	return t
}()

const (
	nameStart = 1 + iota
	nameRest
)

// name scans an XML name (colons allowed) at s.pos. Non-ASCII name characters
// are accepted as long as they are valid XML characters: names are matched
// exactly against the model afterwards.
func (s *scanner) name() ([]byte, error) {
	start := s.pos
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(s.b[s.pos:])
			if r == utf8.RuneError || !xmltext.IsChar(r) {
				return nil, s.syntaxErr("invalid character in a name")
			}
			s.pos += n
			continue
		}
		switch asciiName[c] {
		case nameStart:
			s.pos++
		case nameRest:
			if s.pos == start {
				return nil, s.syntaxErr("invalid name start character %q", c)
			}
			s.pos++
		default:
			if s.pos == start {
				return nil, s.syntaxErr("name expected")
			}
			return s.b[start:s.pos], nil
		}
	}
	return nil, s.syntaxErr("unexpected end of input in a name")
}

// qname scans a name and splits it into prefix and local part.
func (s *scanner) qname() (prefix, local []byte, err error) {
	n, err := s.name()
	if err != nil {
		return nil, nil, err
	}
	i := bytes.IndexByte(n, ':')
	if i < 0 {
		return nil, n, nil
	}
	prefix, local = n[:i], n[i+1:]
	if len(prefix) == 0 || len(local) == 0 || bytes.IndexByte(local, ':') >= 0 {
		return nil, nil, s.syntaxErr("invalid qualified name %q", n)
	}
	return prefix, local, nil
}

// atEndTag reports whether s.pos is at "</" (call after text).
func (s *scanner) atEndTag() bool {
	return s.pos+1 < len(s.b) && s.b[s.pos+1] == '/'
}

// startTag scans the start tag at s.pos ("<" not followed by '/', '!' or '?'),
// fills s.attrs, pushes its namespace declarations and returns the element's
// namespace class, local name, raw qualified name (for the end tag) and whether
// it is an empty-element tag. The caller must then call closeEmpty (empty) or
// read the content up to endTag.
func (s *scanner) startTag() (class nsClass, local, qname []byte, empty bool, err error) {
	s.pos++
	qstart := s.pos
	prefix, local, err := s.qname()
	if err != nil {
		return 0, nil, nil, false, err
	}
	qname = s.b[qstart:s.pos]
	s.attrs, s.abuf = s.attrs[:0], s.abuf[:0]
	for {
		ws := s.skipSpace()
		if s.pos >= len(s.b) {
			return 0, nil, nil, false, s.syntaxErr("unexpected end of input in a start tag")
		}
		c := s.b[s.pos]
		if c == '>' {
			s.pos++
			break
		}
		if c == '/' {
			if s.pos+1 >= len(s.b) || s.b[s.pos+1] != '>' {
				return 0, nil, nil, false, s.syntaxErr(`"/" not followed by ">"`)
			}
			s.pos += 2
			empty = true
			break
		}
		if !ws {
			return 0, nil, nil, false, s.syntaxErr("whitespace expected before an attribute")
		}
		if err := s.attribute(); err != nil {
			return 0, nil, nil, false, err
		}
	}
	for i := range s.attrs {
		if a := &s.attrs[i]; a.inBuf {
			a.value = s.abuf[a.vs:a.ve]
		}
	}
	s.depth++
	if err := s.declare(); err != nil {
		return 0, nil, nil, false, err
	}
	class, err = s.resolve(prefix)
	return class, local, qname, empty, err
}

// attribute scans one name="value" pair into s.attrs.
func (s *scanner) attribute() error {
	prefix, local, err := s.qname()
	if err != nil {
		return err
	}
	for i := range s.attrs {
		if bytes.Equal(s.attrs[i].prefix, prefix) && bytes.Equal(s.attrs[i].local, local) {
			return s.syntaxErr("attribute %q repeated", local)
		}
	}
	s.skipSpace()
	if s.pos >= len(s.b) || s.b[s.pos] != '=' {
		return s.syntaxErr(`"=" expected after attribute %q`, local)
	}
	s.pos++
	s.skipSpace()
	if s.pos >= len(s.b) || (s.b[s.pos] != '"' && s.b[s.pos] != '\'') {
		return s.syntaxErr("quoted value expected for attribute %q", local)
	}
	quote := s.b[s.pos]
	s.pos++
	a := rawAttr{prefix: prefix, local: local}
	runStart := s.pos
	for {
		if s.pos >= len(s.b) {
			return s.syntaxErr("unexpected end of input in an attribute value")
		}
		c := s.b[s.pos]
		switch {
		case c == quote:
			if a.inBuf {
				s.abuf = append(s.abuf, s.b[runStart:s.pos]...)
				a.ve = len(s.abuf)
			} else {
				a.value = s.b[runStart:s.pos]
			}
			s.pos++
			s.attrs = append(s.attrs, a)
			return nil
		case c == '<':
			return s.syntaxErr(`"<" in an attribute value`)
		case c == '&' || c == '\t' || c == '\n' || c == '\r':
			if !a.inBuf {
				a.inBuf, a.vs = true, len(s.abuf)
			}
			s.abuf = append(s.abuf, s.b[runStart:s.pos]...)
			if c == '&' {
				if s.abuf, err = s.reference(s.abuf); err != nil {
					return err
				}
			} else {
				// Attribute-value normalisation: each literal tab, newline or
				// line end (CR LF counts as one) becomes a space.
				s.abuf = append(s.abuf, ' ')
				s.pos++
				if c == '\r' && s.pos < len(s.b) && s.b[s.pos] == '\n' {
					s.pos++
				}
			}
			runStart = s.pos
		case c < 0x20:
			return s.syntaxErr("invalid character %U in an attribute value", rune(c))
		case c >= utf8.RuneSelf:
			if err := s.checkRune(); err != nil {
				return err
			}
		default:
			s.pos++
		}
	}
}

// checkRune validates the multi-byte character at s.pos and steps over it.
func (s *scanner) checkRune() error {
	r, n := utf8.DecodeRune(s.b[s.pos:])
	if (r == utf8.RuneError && n <= 1) || !xmltext.IsChar(r) {
		return s.syntaxErr("invalid UTF-8 or non-XML character")
	}
	s.pos += n
	return nil
}

// reference decodes the entity or character reference at s.pos ('&') and
// appends its character to dst. Only the five predefined entities exist.
func (s *scanner) reference(dst []byte) ([]byte, error) {
	end := s.pos + 1
	for end < len(s.b) && isRefChar(s.b[end]) {
		end++
	}
	if end >= len(s.b) || s.b[end] != ';' {
		return dst, s.syntaxErr("unterminated reference")
	}
	ref := s.b[s.pos+1 : end]
	s.pos = end + 1
	switch string(ref) {
	case "lt":
		return append(dst, '<'), nil
	case "gt":
		return append(dst, '>'), nil
	case "amp":
		return append(dst, '&'), nil
	case "apos":
		return append(dst, '\''), nil
	case "quot":
		return append(dst, '"'), nil
	}
	if len(ref) < 2 || ref[0] != '#' {
		return dst, s.syntaxErr("undefined entity &%s;", ref)
	}
	digits, base := ref[1:], 10
	if digits[0] == 'x' {
		digits, base = digits[1:], 16
	}
	if len(digits) == 0 {
		return dst, s.syntaxErr("empty character reference")
	}
	r := 0
	for _, c := range digits {
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return dst, s.syntaxErr("invalid character reference &%s;", ref)
		}
		r = r*base + d
		if r > utf8.MaxRune {
			return dst, s.syntaxErr("character reference &%s; out of range", ref)
		}
	}
	if !xmltext.IsChar(rune(r)) {
		return dst, s.syntaxErr("character reference &%s; is not an XML character", ref)
	}
	return utf8.AppendRune(dst, rune(r)), nil
}

// isRefChar reports the bytes an entity or character reference name can hold
// (ASCII name characters and '#').
func isRefChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '#' || c == '_' || c == '-' || c == '.' || c == ':'
}

// declare pushes the namespace declarations of the current start tag.
func (s *scanner) declare() error {
	for i := range s.attrs {
		a := &s.attrs[i]
		if !a.isDecl() {
			continue
		}
		var prefix []byte
		if len(a.prefix) != 0 {
			prefix = a.local
			if len(a.value) == 0 {
				return s.syntaxErr("namespace prefix %q undeclared (not allowed in XML 1.0)", prefix)
			}
		}
		class := nsOther
		switch string(a.value) {
		case s.wantNS:
			class = nsPayload
		case xsiNamespace:
			class = nsXSI
		}
		s.ns = append(s.ns, binding{prefix: prefix, class: class, depth: s.depth})
	}
	return nil
}

// resolve returns the namespace class of an element prefix (empty for the
// default namespace) or of an attribute's non-empty prefix in the current scope.
func (s *scanner) resolve(prefix []byte) (nsClass, error) {
	for i := len(s.ns) - 1; i >= 0; i-- {
		if bytes.Equal(s.ns[i].prefix, prefix) {
			return s.ns[i].class, nil
		}
	}
	switch {
	case len(prefix) == 0 && s.wantNS == "":
		return nsPayload, nil
	case len(prefix) == 0, string(prefix) == "xml":
		return nsOther, nil
	}
	return 0, s.syntaxErr("namespace prefix %q is not declared", prefix)
}

// pop leaves the current element: drops its namespace declarations.
func (s *scanner) pop() {
	for len(s.ns) > 0 && s.ns[len(s.ns)-1].depth == s.depth {
		s.ns = s.ns[:len(s.ns)-1]
	}
	s.depth--
}

// closeEmpty finishes an empty-element tag returned by startTag.
func (s *scanner) closeEmpty() { s.pop() }

// endTag scans "</qname>" at s.pos and leaves the element.
func (s *scanner) endTag(qname []byte) error {
	s.pos += 2
	if !bytes.HasPrefix(s.b[s.pos:], qname) {
		return s.syntaxErr("end tag does not match <%s>", qname)
	}
	s.pos += len(qname)
	s.skipSpace()
	if s.pos >= len(s.b) || s.b[s.pos] != '>' {
		return s.syntaxErr("end tag does not match <%s>", qname)
	}
	s.pos++
	s.pop()
	return nil
}

// plainText marks the bytes character data can contain without any checking
// or rewriting (printable ASCII except '<', '&', ']', and tab/newline).
var plainText = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	t['<'], t['&'], t[']'] = false, false, false
	t['\t'], t['\n'] = true, true
	return t
}()

// text reads character data up to the next start or end tag, resolving
// references and CDATA sections, normalising line ends and skipping comments
// and processing instructions. The result aliases the input or the scanner's
// scratch buffer and is valid until the next call of text.
func (s *scanner) text() ([]byte, error) {
	start, runStart, buffered := s.pos, s.pos, false
	s.tbuf = s.tbuf[:0]
	flush := func() {
		s.tbuf = append(s.tbuf, s.b[runStart:s.pos]...)
		buffered = true
	}
	for {
		for s.pos < len(s.b) && plainText[s.b[s.pos]] {
			s.pos++
		}
		if s.pos >= len(s.b) {
			return nil, s.syntaxErr("unexpected end of input in element content")
		}
		switch c := s.b[s.pos]; {
		case c == '<':
			switch {
			case s.hasPrefix("<![CDATA["):
				flush()
				if err := s.cdata(); err != nil {
					return nil, err
				}
			case s.hasPrefix("<!--"):
				flush()
				if err := s.skipComment(); err != nil {
					return nil, err
				}
			case s.hasPrefix("<?"):
				flush()
				if err := s.skipPI(false); err != nil {
					return nil, err
				}
			case s.hasPrefix("<!"):
				return nil, s.syntaxErr("declaration inside element content")
			default:
				if !buffered {
					return s.b[start:s.pos], nil
				}
				flush()
				return s.tbuf, nil
			}
			runStart = s.pos
		case c == '&':
			flush()
			var err error
			if s.tbuf, err = s.reference(s.tbuf); err != nil {
				return nil, err
			}
			runStart = s.pos
		case c == '\r':
			flush()
			s.tbuf = append(s.tbuf, '\n')
			s.pos++
			if s.pos < len(s.b) && s.b[s.pos] == '\n' {
				s.pos++
			}
			runStart = s.pos
		case c == ']':
			if s.hasPrefix("]]>") {
				return nil, s.syntaxErr(`"]]>" in character data`)
			}
			s.pos++
		case c >= utf8.RuneSelf:
			if err := s.checkRune(); err != nil {
				return nil, err
			}
		default:
			return nil, s.syntaxErr("invalid character %U in character data", rune(c))
		}
	}
}

// cdata appends the content of the CDATA section at s.pos to s.tbuf.
func (s *scanner) cdata() error {
	body := s.pos + len("<![CDATA[")
	end := bytes.Index(s.b[body:], []byte("]]>"))
	if end < 0 {
		return s.syntaxErr("unterminated CDATA section")
	}
	raw := s.b[body : body+end]
	if !validChars(raw) {
		return s.syntaxErr("invalid character in a CDATA section")
	}
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\r')
		if i < 0 {
			s.tbuf = append(s.tbuf, raw...)
			break
		}
		s.tbuf = append(s.tbuf, raw[:i]...)
		s.tbuf = append(s.tbuf, '\n')
		raw = raw[i+1:]
		if len(raw) > 0 && raw[0] == '\n' {
			raw = raw[1:]
		}
	}
	s.pos = body + end + 3
	return nil
}

// validChars reports whether b is valid UTF-8 made only of XML characters.
func validChars(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n <= 1) || !xmltext.IsChar(r) {
			return false
		}
		i += n
	}
	return true
}
