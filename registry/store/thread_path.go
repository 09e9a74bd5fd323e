package store

import (
	"encoding/json"
	"strings"
)

// A thread's path is stored as a JSON array of listener names. Names are
// plain in practice (letters, digits, '-', '_', '.', ':'), and every
// thread is written once and read at every start, so the two directions
// take a shortcut for such arrays and hand anything else to encoding/json.
// The shortcut writes exactly what json.Marshal writes and reads exactly
// what json.Unmarshal reads for the arrays it takes (TestThreadPathJSON,
// FuzzThreadPathJSON).

// plainPathByte reports the bytes a name may hold for the shortcut: those
// JSON strings carry as they are and json.Marshal does not escape.
var plainPathByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// plainName reports whether s is a name the shortcut takes.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainPathByte[s[i]] {
			return false
		}
	}
	return true
}

// marshalPath returns the JSON array of path (nil as []), as json.Marshal
// would, as the string the row keeps (built in place: one allocation per
// thread row, where the bytes and their string were two).
func marshalPath(path []string) (string, error) {
	n := 2
	for _, p := range path {
		if !plainName(p) {
			if path == nil {
				path = []string{}
			}
			b, err := json.Marshal(path)
			return string(b), err
		}
		n += len(p) + 3
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, p := range path {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(p)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String(), nil
}

// unmarshalPath reads the JSON array of a thread's path, as json.Unmarshal
// would into a []string.
func unmarshalPath(s string) ([]string, error) {
	if out, ok := plainPath(s); ok {
		return out, nil
	}
	var out []string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}

// plainPath reads s when it is exactly ["name",…] (or []) of plain names,
// without whitespace; ok is false for anything else.
func plainPath(s string) (out []string, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if body == "" {
		return []string{}, true
	}
	out = make([]string, 0, strings.Count(body, ",")+1)
	for {
		if len(body) < 2 || body[0] != '"' {
			return nil, false
		}
		end := strings.IndexByte(body[1:], '"')
		if end < 0 {
			return nil, false
		}
		name := body[1 : 1+end]
		if !plainName(name) {
			return nil, false
		}
		out = append(out, name)
		body = body[2+end:]
		if body == "" {
			return out, true
		}
		if body[0] != ',' {
			return nil, false
		}
		body = body[1:]
	}
}
