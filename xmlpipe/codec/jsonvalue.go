package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of a JSON payload.
const maxJSONDepth = 128

// jkind is the type of a parsed JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

// String names the JSON type as error messages do.
func (k jkind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// jvalue is one parsed JSON value. Objects keep their members in order
// (keys are unique: parseJSON refuses duplicates).
type jvalue struct {
	kind  jkind
	b     bool
	s     string // the string, or the number's literal text
	items []jvalue
	keys  []string
	vals  []jvalue
}

// CheckJSONText reports JSON text that encoding/json would silently alter:
// bytes that are not UTF-8, and \u escapes of half a surrogate pair (both
// become U+FFFD). RFC 8259 JSON is UTF-8; these are refused, not repaired.
func CheckJSONText(data []byte) error {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("JSON text is not valid UTF-8 (byte %d)", i)
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := escapedRune(data, i)
		switch {
		case !ok:
			i++ // \x: the escaped byte is not the start of an escape
		case r >= 0xdc00 && r <= 0xdfff:
			return fmt.Errorf("JSON text escapes an unpaired surrogate (byte %d)", i)
		case r >= 0xd800 && r <= 0xdbff:
			lo, ok := escapedRune(data, i+6)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return fmt.Errorf("JSON text escapes an unpaired surrogate (byte %d)", i)
			}
			i += 11
		default:
			i += 5
		}
	}
	return nil
}

// escapedRune decodes the \uXXXX escape at data[i:] (ok false: none there).
func escapedRune(data []byte, i int) (rune, bool) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range data[i+2 : i+6] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// parseJSON reads exactly one JSON value from data, refusing what encoding/json
// would alter (CheckJSONText), duplicate object keys, nesting deeper than
// maxJSONDepth and trailing data.
func parseJSON(data []byte) (jvalue, error) {
	if err := CheckJSONText(data); err != nil {
		return jvalue{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return jvalue{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jvalue{}, errors.New("invalid JSON: data after the value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (jvalue, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return jvalue{}, fmt.Errorf("invalid JSON: %w", err)
	}
	switch t := tok.(type) {
	case nil:
		return jvalue{kind: jNull}, nil
	case bool:
		return jvalue{kind: jBool, b: t}, nil
	case json.Number:
		return jvalue{kind: jNumber, s: t.String()}, nil
	case string:
		return jvalue{kind: jString, s: t}, nil
	case json.Delim:
		if depth >= maxJSONDepth {
			return jvalue{}, fmt.Errorf("invalid JSON: nested deeper than %d", maxJSONDepth)
		}
		if t == '[' {
			v := jvalue{kind: jArray}
			for dec.More() {
				it, err := parseValue(dec, depth+1)
				if err != nil {
					return jvalue{}, err
				}
				v.items = append(v.items, it)
			}
			_, err := dec.Token() // ]
			return v, err
		}
		v := jvalue{kind: jObject}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return jvalue{}, fmt.Errorf("invalid JSON: %w", err)
			}
			k, _ := kt.(string)
			if seen[k] {
				return jvalue{}, fmt.Errorf("invalid JSON: key %q appears twice", k)
			}
			seen[k] = true
			it, err := parseValue(dec, depth+1)
			if err != nil {
				return jvalue{}, err
			}
			v.keys, v.vals = append(v.keys, k), append(v.vals, it)
		}
		_, err := dec.Token() // }
		return v, err
	}
	return jvalue{}, fmt.Errorf("invalid JSON: unexpected %v", tok)
}

// appendCompact writes v as compact JSON (HTML characters unescaped).
func (v jvalue) appendCompact(dst []byte) []byte {
	switch v.kind {
	case jNull:
		return append(dst, "null"...)
	case jBool:
		return strconv.AppendBool(dst, v.b)
	case jNumber:
		return append(dst, v.s...)
	case jString:
		return appendJSONString(dst, v.s)
	case jArray:
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.appendCompact(dst)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i, k := range v.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = v.vals[i].appendCompact(dst)
	}
	return append(dst, '}')
}

// appendJSONString writes s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
