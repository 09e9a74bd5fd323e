package stage

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// LexFix is the lexical pre-pass of the repair path. libxml2's recover mode mends
// structure (unclosed or mis-nested tags, truncation) but silently drops data on
// lexical errors — a bare "&", "1 < 2", an unquoted attribute (go-deps.md §2.1).
// LexFix escapes bare "&" and "<", quotes unquoted attribute values, drops
// duplicate attributes and removes characters XML forbids. It returns the fixed
// bytes and one diagnostic per change. Well-formed input comes back unchanged
// (the same bytes) with no diagnostics.
func LexFix(in []byte) ([]byte, []failure.Diagnostic) {
	f := lexFixer{in: in, line: 1}
	f.run()
	if len(f.diags) == 0 {
		return in, nil
	}
	return f.out.Bytes(), f.diags
}

type lexFixer struct {
	in    []byte
	i     int
	line  int
	out   bytes.Buffer
	diags []failure.Diagnostic
}

func (f *lexFixer) note(format string, args ...any) {
	f.diags = append(f.diags, failure.Diagnostic{Stage: failure.StageRepair, Line: f.line, Msg: fmt.Sprintf(format, args...)})
}

func (f *lexFixer) emit(b []byte) {
	for _, c := range b {
		if c == '\n' {
			f.line++
		}
	}
	f.out.Write(b)
}

// copyUntil copies through the first occurrence of end (inclusive) or to EOF.
func (f *lexFixer) copyUntil(end string) {
	j := bytes.Index(f.in[f.i:], []byte(end))
	stop := len(f.in)
	if j >= 0 {
		stop = f.i + j + len(end)
	}
	f.emitChars(f.in[f.i:stop])
	f.i = stop
}

// emitChars copies text, removing characters XML 1.0 forbids.
func (f *lexFixer) emitChars(b []byte) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if !isXMLChar(r) || (r == utf8.RuneError && n == 1) {
			f.note("removed forbidden character %U", r)
			b = b[n:]
			continue
		}
		f.emit(b[:n])
		b = b[n:]
	}
}

func isXMLChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) ||
		(r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= 0x80
}

func isNameChar(c byte) bool {
	return isNameStart(c) || c >= '0' && c <= '9' || c == '-' || c == '.'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// refLen returns the length of a valid entity or character reference at b
// ("&amp;", "&#10;", "&#x1F;"), or 0.
func refLen(b []byte) int {
	if len(b) < 3 || b[0] != '&' {
		return 0
	}
	end := bytes.IndexByte(b[:min(len(b), 12)], ';')
	if end < 2 {
		return 0
	}
	body := b[1:end]
	switch string(body) {
	case "amp", "lt", "gt", "quot", "apos":
		return end + 1
	}
	if body[0] != '#' || len(body) < 2 {
		return 0
	}
	digits, hex := body[1:], false
	if digits[0] == 'x' {
		digits, hex = digits[1:], true
	}
	if len(digits) == 0 {
		return 0
	}
	v := 0
	for _, c := range digits {
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case hex && c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case hex && c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return 0
		}
		if hex {
			v = v*16 + d
		} else {
			v = v*10 + d
		}
		if v > 0x10FFFF {
			return 0
		}
	}
	if !isXMLChar(rune(v)) {
		return 0
	}
	return end + 1
}

func (f *lexFixer) run() {
	for f.i < len(f.in) {
		c := f.in[f.i]
		switch {
		case c == '<' && bytes.HasPrefix(f.in[f.i:], []byte("<!--")):
			f.copyUntil("-->")
		case c == '<' && bytes.HasPrefix(f.in[f.i:], []byte("<![CDATA[")):
			f.copyUntil("]]>")
		case c == '<' && bytes.HasPrefix(f.in[f.i:], []byte("<!")):
			f.copyUntil(">")
		case c == '<' && bytes.HasPrefix(f.in[f.i:], []byte("<?")):
			f.copyUntil("?>")
		case c == '<' && f.i+1 < len(f.in) && f.in[f.i+1] == '/':
			f.copyUntil(">")
		case c == '<' && f.i+1 < len(f.in) && isNameStart(f.in[f.i+1]):
			f.tag()
		case c == '<':
			f.note("escaped bare '<'")
			f.emit([]byte("&lt;"))
			f.i++
		case c == '&':
			if n := refLen(f.in[f.i:]); n > 0 {
				f.emit(f.in[f.i : f.i+n])
				f.i += n
			} else {
				f.note("escaped bare '&'")
				f.emit([]byte("&amp;"))
				f.i++
			}
		default:
			j := f.i
			for j < len(f.in) && f.in[j] != '<' && f.in[j] != '&' {
				j++
			}
			f.emitChars(f.in[f.i:j])
			f.i = j
		}
	}
}

// tag copies a start tag, quoting unquoted attribute values, escaping '<' and
// bare '&' inside values and dropping repeated attribute names.
func (f *lexFixer) tag() {
	start := f.i
	f.i++ // '<'
	for f.i < len(f.in) && isNameChar(f.in[f.i]) {
		f.i++
	}
	f.emit(f.in[start:f.i])
	seen := map[string]bool{}
	for f.i < len(f.in) {
		// whitespace
		ws := f.i
		for f.i < len(f.in) && isSpace(f.in[f.i]) {
			f.i++
		}
		if f.i >= len(f.in) {
			f.emit(f.in[ws:f.i])
			return
		}
		c := f.in[f.i]
		if c == '>' {
			f.emit(f.in[ws : f.i+1])
			f.i++
			return
		}
		if c == '/' && f.i+1 < len(f.in) && f.in[f.i+1] == '>' {
			f.emit(f.in[ws : f.i+2])
			f.i += 2
			return
		}
		if !isNameStart(c) {
			// Not an attribute: leave the rest of the tag to libxml2's recovery.
			f.emit(f.in[ws:f.i])
			return
		}
		ns := f.i
		for f.i < len(f.in) && isNameChar(f.in[f.i]) {
			f.i++
		}
		name := string(f.in[ns:f.i])
		eqStart := f.i
		for f.i < len(f.in) && isSpace(f.in[f.i]) {
			f.i++
		}
		if f.i >= len(f.in) || f.in[f.i] != '=' {
			// Attribute without a value: give it an empty one.
			f.note("attribute %q had no value", name)
			f.i = eqStart
			if seen[name] {
				f.note("dropped repeated attribute %q", name)
				continue
			}
			seen[name] = true
			f.emit(f.in[ws:eqStart])
			f.emit([]byte(`=""`))
			continue
		}
		f.i++ // '='
		for f.i < len(f.in) && isSpace(f.in[f.i]) {
			f.i++
		}
		var val []byte
		quoted := byte(0)
		if f.i < len(f.in) && (f.in[f.i] == '"' || f.in[f.i] == '\'') {
			quoted = f.in[f.i]
			j := bytes.IndexByte(f.in[f.i+1:], quoted)
			if j < 0 {
				val = f.in[f.i+1:]
				f.i = len(f.in)
				f.note("attribute %q value was not closed", name)
			} else {
				val = f.in[f.i+1 : f.i+1+j]
				f.i += j + 2
			}
		} else {
			vs := f.i
			for f.i < len(f.in) && !isSpace(f.in[f.i]) && f.in[f.i] != '>' &&
				!(f.in[f.i] == '/' && f.i+1 < len(f.in) && f.in[f.i+1] == '>') {
				f.i++
			}
			val = f.in[vs:f.i]
			f.note("quoted unquoted value of attribute %q", name)
		}
		if seen[name] {
			f.note("dropped repeated attribute %q", name)
			continue
		}
		seen[name] = true
		q := quoted
		if q == 0 {
			q = '"'
		}
		if quoted != 0 && bytes.IndexByte(val, '<') < 0 && !hasBareAmp(val) {
			f.emit(f.in[ws:eqStart])
			f.emit([]byte{'=', q})
			f.emitChars(val)
			f.emit([]byte{q})
			continue
		}
		f.emit(f.in[ws:eqStart])
		f.emit([]byte{'=', q})
		f.attrValue(val, q)
		f.emit([]byte{q})
	}
}

func hasBareAmp(v []byte) bool {
	for i := 0; i < len(v); i++ {
		if v[i] == '&' {
			n := refLen(v[i:])
			if n == 0 {
				return true
			}
			i += n - 1
		}
	}
	return false
}

func (f *lexFixer) attrValue(v []byte, q byte) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '<':
			f.note("escaped '<' in an attribute value")
			f.emit([]byte("&lt;"))
		case c == q:
			f.emit([]byte("&quot;"))
		case c == '&':
			if n := refLen(v[i:]); n > 0 {
				f.emit(v[i : i+n])
				i += n - 1
			} else {
				f.note("escaped bare '&' in an attribute value")
				f.emit([]byte("&amp;"))
			}
		default:
			r, n := utf8.DecodeRune(v[i:])
			if !isXMLChar(r) || (r == utf8.RuneError && n == 1) {
				f.note("removed forbidden character %U", r)
			} else {
				f.emit(v[i : i+n])
			}
			i += n - 1
		}
	}
}
