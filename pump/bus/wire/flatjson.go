package wire

import "unicode/utf8"

// ScanFlat reads data without reflection when it is a flat JSON object:
// valid UTF-8, keys of lower-case ASCII letters and underscores, values
// that are plain strings (no escape, no control character) or integers
// (JSON's grammar: no leading zero; no fraction, no exponent), whitespace
// anywhere JSON allows it and nothing after the object. It calls field for
// each member in order, with the key, the value (a string's contents without
// its quotes, or an integer's digits) and whether it is a string, and
// returns true when the whole object was read; it returns false at the first
// thing outside that form, or when field returns false. field's slices are
// views of data.
//
// It is the fast path of the frames sent most on /ws — the server's reading
// of a send request, a load generator's reading of "sent" and output frames
// — whose callers decode anything else with encoding/json: for the objects
// ScanFlat accepts, an exact lower-case key is the only one encoding/json
// would match to a field named so, so both agree.
func ScanFlat(data []byte, field func(key, value []byte, str bool) bool) bool {
	if !utf8.Valid(data) {
		return false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		key, j, ok := plainString(data, i)
		if !ok || !lowerKey(key) {
			return false
		}
		j = skipSpace(data, j)
		if j >= len(data) || data[j] != ':' {
			return false
		}
		j = skipSpace(data, j+1)
		var val []byte
		str := j < len(data) && data[j] == '"'
		if str {
			val, j, ok = plainString(data, j)
		} else {
			var end int
			if end, ok = plainInt(data, j); ok {
				val, j = data[j:end], end
			}
		}
		if !ok || !field(key, val, str) {
			return false
		}
		j = skipSpace(data, j)
		if j >= len(data) {
			return false
		}
		if data[j] == '}' {
			return skipSpace(data, j+1) == len(data)
		}
		if data[j] != ',' {
			return false
		}
		i = skipSpace(data, j+1)
	}
}

// lowerKey reports whether key is non-empty lower-case ASCII letters and
// underscores.
func lowerKey(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	for _, c := range key {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainString reads the JSON string at data[i:] when it has no escape and
// no control character, returning its contents and the index after its
// closing quote.
func plainString(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainInt returns the index after the integer at data[i:] (JSON's grammar,
// without fraction or exponent).
func plainInt(data []byte, i int) (int, bool) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	start := j
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	switch {
	case j == start:
		return 0, false
	case data[start] == '0' && j-start > 1:
		return 0, false
	case j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E'):
		return 0, false
	}
	return j, true
}
