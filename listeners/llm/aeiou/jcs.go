package aeiou

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical JSON (JCS, RFC 8785) restricted to AEIOU v3's scalars (§6.3):
// strings, integers, booleans and null, in arrays and objects.
//
// What is accepted, precisely:
//   - Integers are JSON numbers without fraction or exponent whose value is
//     within ±(2^53−1) (MaxInteger): the range in which every IEEE-754
//     double, hence every I-JSON implementation, is exact, so RFC 8785's
//     ECMAScript number serialisation is the plain decimal form. "-0" is
//     accepted and canonicalised to "0", as ECMAScript prints it. A number
//     with a fraction or exponent is refused with ErrFloat even when its
//     value is integral ("1.0", "1e3"); an integer beyond the range is
//     refused with ErrIntegerRange.
//   - Strings must be well-formed Unicode: invalid UTF-8 and lone surrogate
//     escapes are refused (ErrInvalidString). Nothing is normalised: a
//     precomposed "Å" (U+00C5) and "A"+U+030A stay different strings with
//     different bytes, as RFC 8785 requires.
//   - Duplicate object keys (compared after escape decoding) are refused
//     (ErrDuplicateKey), as I-JSON requires.
//   - Nesting is limited to MaxJSONDepth (ErrTooDeep).
//
// The canonical form (RFC 8785 §3.2): no whitespace; object members sorted
// by their keys' UTF-16 code units; strings escaped as ECMAScript's
// JSON.stringify does — \" and \\, \b \t \n \f \r for those controls, \u00xx
// (lower-case hex) for the other controls below U+0020, every other
// character (U+007F, U+2028, non-ASCII, supplementary) as its raw UTF-8.
//
// Parsed values are nil, bool, string, int64, []any and map[string]any.

const (
	// MaxInteger is the largest magnitude of an accepted integer, 2^53−1.
	MaxInteger = 1<<53 - 1
	// MaxJSONDepth bounds the nesting of arrays and objects.
	MaxJSONDepth = 64
)

// jsonNumber is a number ParseJSON kept as its literal because the caller
// allowed non-integers (USERDATA); it has no canonical form here.
type jsonNumber string

// ParseJSON parses one JSON value under the rules above (integers only).
func ParseJSON(data []byte) (any, error) {
	return parseJSON(data, false)
}

// parseJSON parses data; floats allows non-integer numbers, returned as
// jsonNumber (USERDATA may hold them, token payloads may not).
func parseJSON(data []byte, floats bool) (any, error) {
	p := &jsonParser{data: data, floats: floats}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.fail(ErrJSONSyntax, "data after the JSON value")
	}
	return v, nil
}

// Canonicalize returns the JCS form of the JSON value in data.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	return MarshalCanonical(v)
}

// MarshalCanonical returns the JCS form of a Go value: nil, bool, string,
// any Go integer type, []any, []string, map[string]any and map[string]string
// (the other types are ErrUnsupportedType).
func MarshalCanonical(v any) ([]byte, error) {
	var b []byte
	return appendCanonical(b, v, 0)
}

func marshalErr(err error, format string, args ...any) error {
	return &JSONError{Offset: -1, Err: err, Detail: fmt.Sprintf(format, args...)}
}

func appendCanonical(b []byte, v any, depth int) ([]byte, error) {
	if depth > MaxJSONDepth {
		return nil, marshalErr(ErrTooDeep, "more than %d levels", MaxJSONDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		if !utf8.ValidString(x) {
			return nil, marshalErr(ErrInvalidString, "invalid UTF-8 in %q", x)
		}
		return appendString(b, x), nil
	case int:
		return appendInt(b, int64(x))
	case int8:
		return appendInt(b, int64(x))
	case int16:
		return appendInt(b, int64(x))
	case int32:
		return appendInt(b, int64(x))
	case int64:
		return appendInt(b, x)
	case uint:
		return appendUint(b, uint64(x))
	case uint8:
		return appendUint(b, uint64(x))
	case uint16:
		return appendUint(b, uint64(x))
	case uint32:
		return appendUint(b, uint64(x))
	case uint64:
		return appendUint(b, x)
	case float32, float64, jsonNumber:
		return nil, marshalErr(ErrFloat, "%v", x)
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, s, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return appendObject(b, m, depth)
	case map[string]any:
		return appendObject(b, x, depth)
	default:
		return nil, marshalErr(ErrUnsupportedType, "%T", v)
	}
}

func appendObject(b []byte, m map[string]any, depth int) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !utf8.ValidString(k) {
			return nil, marshalErr(ErrInvalidString, "invalid UTF-8 in key %q", k)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendCanonical(b, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendInt(b []byte, n int64) ([]byte, error) {
	if n > MaxInteger || n < -MaxInteger {
		return nil, marshalErr(ErrIntegerRange, "%d", n)
	}
	return strconv.AppendInt(b, n, 10), nil
}

func appendUint(b []byte, n uint64) ([]byte, error) {
	if n > MaxInteger {
		return nil, marshalErr(ErrIntegerRange, "%d", n)
	}
	return strconv.AppendUint(b, n, 10), nil
}

// appendString appends s (valid UTF-8) quoted and escaped per RFC 8785.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units
// (RFC 8785 §3.2.3): a supplementary character (a surrogate pair, units
// D800–DFFF) sorts before U+E000–U+FFFF, unlike code-point order.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			a1, a2 := utf16Units(ra)
			b1, b2 := utf16Units(rb)
			if a1 != b1 {
				return int(a1) - int(b1)
			}
			return int(a2) - int(b2)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Units returns r's first UTF-16 code unit and its second (0 for a BMP
// character).
func utf16Units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	h, l := utf16.EncodeRune(r)
	return uint16(h), uint16(l)
}

// jsonParser is a strict recursive-descent JSON parser.
type jsonParser struct {
	data   []byte
	pos    int
	floats bool
}

func (p *jsonParser) fail(err error, format string, args ...any) error {
	return &JSONError{Offset: p.pos, Err: err, Detail: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.fail(ErrJSONSyntax, "unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, nil
	case p.literal("false"):
		return false, nil
	case p.literal("null"):
		return nil, nil
	default:
		return nil, p.fail(ErrJSONSyntax, "unexpected %q", c)
	}
}

func (p *jsonParser) literal(lit string) bool {
	if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(lit))]), lit) {
		p.pos += len(lit)
		return true
	}
	return false
}

func (p *jsonParser) object(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, p.fail(ErrTooDeep, "more than %d levels", MaxJSONDepth)
	}
	p.pos++ // {
	m := map[string]any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail(ErrJSONSyntax, "expected an object key")
		}
		keyAt := p.pos
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			p.pos = keyAt
			return nil, p.fail(ErrDuplicateKey, "key %q", k)
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail(ErrJSONSyntax, "expected ':'")
		}
		p.pos++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail(ErrJSONSyntax, "unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return m, nil
		default:
			return nil, p.fail(ErrJSONSyntax, "expected ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, p.fail(ErrTooDeep, "more than %d levels", MaxJSONDepth)
	}
	p.pos++ // [
	a := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail(ErrJSONSyntax, "unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return a, nil
		default:
			return nil, p.fail(ErrJSONSyntax, "expected ',' or ']'")
		}
	}
}

// number parses an RFC 8259 number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) number() (any, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if digits() == 0 {
		return nil, p.fail(ErrJSONSyntax, "number without digits")
	}
	if p.data[intStart] == '0' && p.pos-intStart > 1 {
		p.pos = intStart
		return nil, p.fail(ErrJSONSyntax, "number with a leading zero")
	}
	integral := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		integral = false
		p.pos++
		if digits() == 0 {
			return nil, p.fail(ErrJSONSyntax, "fraction without digits")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		integral = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail(ErrJSONSyntax, "exponent without digits")
		}
	}
	lit := string(p.data[start:p.pos])
	if !integral {
		if p.floats {
			return jsonNumber(lit), nil
		}
		p.pos = start
		return nil, p.fail(ErrFloat, "%s", lit)
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil || n > MaxInteger || n < -MaxInteger {
		if p.floats {
			return jsonNumber(lit), nil
		}
		p.pos = start
		return nil, p.fail(ErrIntegerRange, "%s", lit)
	}
	return n, nil
}

// string parses a JSON string at p.pos (the opening quote).
func (p *jsonParser) string() (string, error) {
	p.pos++ // "
	var sb []byte
	start := p.pos
	for {
		if p.pos >= len(p.data) {
			return "", p.fail(ErrJSONSyntax, "unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			sb = append(sb, p.data[start:p.pos]...)
			p.pos++
			return string(sb), nil
		case c < 0x20:
			return "", p.fail(ErrJSONSyntax, "control character %#02x in a string", c)
		case c == '\\':
			sb = append(sb, p.data[start:p.pos]...)
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			sb = utf8.AppendRune(sb, r)
			start = p.pos
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && n == 1 {
				return "", p.fail(ErrInvalidString, "invalid UTF-8 byte %#02x", c)
			}
			p.pos += n
		}
	}
}

// escape decodes the escape sequence at p.pos (the backslash), joining a
// \uD8xx\uDCxx surrogate pair; a lone surrogate is ErrInvalidString.
func (p *jsonParser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.fail(ErrJSONSyntax, "unterminated escape")
	}
	c := p.data[p.pos+1]
	var r rune
	switch c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
	default:
		return 0, p.fail(ErrJSONSyntax, "unknown escape \\%c", c)
	}
	if c != 'u' {
		p.pos += 2
		return r, nil
	}
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r >= 0xDC00 {
		return 0, p.fail(ErrInvalidString, "lone low surrogate \\u%04x", r)
	}
	at := p.pos
	if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		lo, err := p.hex4()
		if err != nil {
			return 0, err
		}
		if lo >= 0xDC00 && lo <= 0xDFFF {
			return utf16.DecodeRune(r, lo), nil
		}
	}
	p.pos = at
	return 0, p.fail(ErrInvalidString, "lone high surrogate \\u%04x", r)
}

// hex4 decodes \uXXXX at p.pos.
func (p *jsonParser) hex4() (rune, error) {
	if p.pos+6 > len(p.data) {
		return 0, p.fail(ErrJSONSyntax, "short \\u escape")
	}
	var r rune
	for _, h := range p.data[p.pos+2 : p.pos+6] {
		var d byte
		switch {
		case h >= '0' && h <= '9':
			d = h - '0'
		case h >= 'a' && h <= 'f':
			d = h - 'a' + 10
		case h >= 'A' && h <= 'F':
			d = h - 'A' + 10
		default:
			return 0, p.fail(ErrJSONSyntax, "bad hex digit %q in \\u escape", h)
		}
		r = r<<4 | rune(d)
	}
	p.pos += 6
	return r, nil
}
