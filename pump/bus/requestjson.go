package bus

import (
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// decodeRequest decodes a /ws client frame into req exactly as decodeJSON
// does, without reflection for the frames clients send most: a flat object
// of known lower-case keys whose values are plain strings (no escapes) or,
// for "id", an integer or a plain string — `{"type":"send","id":7,"raw":"@greeter Dan"}`.
// Anything else (escapes, unknown or differently cased keys, arrays,
// objects, null, other numbers, malformed JSON) goes to decodeJSON, which
// also gives the errors: both decoders agree on every input
// (FuzzDecodeRequest).
func decodeRequest(data []byte, req *wire.Request) error {
	if fastRequest(data, req) {
		return nil
	}
	return decodeJSON(data, req)
}

// fastRequest decodes data into req when it is the simple form
// decodeRequest describes, and reports whether it was. req is untouched
// when it was not.
func fastRequest(data []byte, req *wire.Request) bool {
	if !utf8.Valid(data) {
		return false
	}
	var r wire.Request
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			key, j, ok := plainString(data, i)
			if !ok {
				return false
			}
			j = skipSpace(data, j)
			if j >= len(data) || data[j] != ':' {
				return false
			}
			j = skipSpace(data, j+1)
			if string(key) == "id" {
				end, ok := plainID(data, j)
				if !ok {
					return false
				}
				r.ID = append(r.ID[:0:0], data[j:end]...)
				j = end
			} else {
				val, end, ok := plainString(data, j)
				if !ok || !setRequestField(&r, key, string(val)) {
					return false
				}
				j = end
			}
			j = skipSpace(data, j)
			if j >= len(data) {
				return false
			}
			if data[j] == '}' {
				i = j + 1
				break
			}
			if data[j] != ',' {
				return false
			}
			i = skipSpace(data, j+1)
		}
	}
	if skipSpace(data, i) != len(data) {
		return false
	}
	*req = r
	return true
}

// setRequestField sets the string field of r named key (its JSON name),
// reporting false for any other key.
func setRequestField(r *wire.Request, key []byte, val string) bool {
	switch string(key) {
	case "type":
		r.Type = val
	case "raw":
		r.Raw = val
	case "target":
		r.Target = val
	case "content":
		r.Content = val
	case "text":
		r.Text = val
	case "message":
		r.Message = val
	case "thread_id":
		r.ThreadID = val
	case "prefix":
		r.Prefix = val
	default:
		return false
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
// no control character, returning its contents (a view of data) and the
// index after its closing quote.
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

// plainID returns the index after the "id" value at data[i:] when it is an
// integer (JSON's grammar: no leading zero, no fraction or exponent) or a
// plain string.
func plainID(data []byte, i int) (int, bool) {
	if i < len(data) && data[i] == '"' {
		_, end, ok := plainString(data, i)
		return end, ok
	}
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
