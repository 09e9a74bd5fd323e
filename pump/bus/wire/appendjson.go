package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The AppendJSON methods encode the frames a socket sends most (the reply
// to a send and the events of its conversations) without reflection: each
// appends exactly the bytes json.Marshal produces for the value (fields in
// declaration order, omitempty honoured, strings escaped as encoding/json
// escapes them, HTML characters included), so a client cannot tell which
// encoder wrote a frame. Head has none on purpose: every frame embeds it,
// and a promoted AppendJSON would encode a frame without its own fields.

// appendString appends s as a JSON string, escaped as encoding/json does
// with HTML escaping on: ", \ and control characters, <, > and &, U+2028
// and U+2029, and invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendField appends ,"name": (no comma for the first field, which the
// head always is).
func appendField(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendStringField appends ,"name":"value".
func appendStringField(b []byte, name, value string) []byte {
	return appendString(appendField(b, name), value)
}

// appendStrings appends a JSON array of strings (null when nil, as
// json.Marshal encodes a nil slice).
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// plainID reports whether a request id can be copied as it is: json.Marshal
// compacts a json.RawMessage and escapes HTML characters in it, which
// changes nothing in an id without whitespace, escapes or those characters
// (numbers, simple strings).
func plainID(id []byte) bool {
	for _, c := range id {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c == '"' || c == '-' || c == '+' || c == '.' || c == '_' || c == ':':
		default:
			return false
		}
	}
	return true
}

// openHead starts an object with the head's fields: {"type":…[,"id":…]
// (with no closing brace).
func (h Head) openHead(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, h.Type)
	if len(h.ID) == 0 {
		return b
	}
	b = appendField(b, "id")
	if plainID(h.ID) {
		return append(b, h.ID...)
	}
	raw, err := json.Marshal(h.ID)
	if err != nil {
		// Not valid JSON: json.Marshal of the frame would fail. Request
		// ids come from decoded requests, so this is never reached;
		// null keeps the frame valid.
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// AppendJSON appends the JSON of s.
func (s Sent) AppendJSON(b []byte) []byte {
	b = s.openHead(b)
	b = appendStringField(b, "thread_id", s.ThreadID)
	b = appendStringField(b, "target", s.Target)
	return append(b, '}')
}

// AppendJSON appends the JSON of e.
func (e Error) AppendJSON(b []byte) []byte {
	b = e.openHead(b)
	b = appendStringField(b, "error", e.Error)
	if e.Code != "" {
		b = appendStringField(b, "code", e.Code)
	}
	if len(e.Diagnostics) > 0 {
		b = appendStrings(appendField(b, "diagnostics"), e.Diagnostics)
	}
	if e.RetryAfter != 0 {
		b = strconv.AppendInt(appendField(b, "retry_after"), int64(e.RetryAfter), 10)
	}
	return append(b, '}')
}

// AppendJSON appends the JSON of m.
func (m Message) AppendJSON(b []byte) []byte {
	b = m.openHead(b)
	b = appendStringField(b, "thread_id", m.ThreadID)
	b = appendStringField(b, "from", m.From)
	b = appendStringField(b, "to", m.To)
	b = appendStringField(b, "listener", m.Listener)
	b = appendStringField(b, "payload_type", m.PayloadType)
	b = appendStringField(b, "payload", m.Payload)
	b = appendStringField(b, "timestamp", m.Timestamp)
	b = appendStringField(b, "message_id", m.MessageID)
	return append(b, '}')
}

// AppendJSON appends the JSON of o.
func (o Output) AppendJSON(b []byte) []byte {
	b = o.openHead(b)
	b = appendStringField(b, "thread_id", o.ThreadID)
	b = appendStringField(b, "from", o.From)
	b = appendStringField(b, "text", o.Text)
	b = appendStringField(b, "message_id", o.MessageID)
	if o.Streamed {
		b = append(appendField(b, "streamed"), "true"...)
	}
	return append(b, '}')
}

// AppendJSON appends the JSON of r.
func (r Reply) AppendJSON(b []byte) []byte {
	b = r.openHead(b)
	b = appendStringField(b, "thread_id", r.ThreadID)
	b = appendStringField(b, "from", r.From)
	b = appendStringField(b, "to", r.To)
	b = appendStringField(b, "payload_type", r.PayloadType)
	b = appendStringField(b, "payload", r.Payload)
	if r.Text != "" {
		b = appendStringField(b, "text", r.Text)
	}
	b = appendStringField(b, "timestamp", r.Timestamp)
	b = appendStringField(b, "message_id", r.MessageID)
	if r.Streamed {
		b = append(appendField(b, "streamed"), "true"...)
	}
	return append(b, '}')
}

// AppendJSON appends the JSON of f.
func (f Failure) AppendJSON(b []byte) []byte {
	b = f.openHead(b)
	b = appendStringField(b, "thread_id", f.ThreadID)
	if f.From != "" {
		b = appendStringField(b, "from", f.From)
	}
	if f.To != "" {
		b = appendStringField(b, "to", f.To)
	}
	b = appendStringField(b, "error", f.Error)
	if len(f.Diagnostics) > 0 {
		b = appendStrings(appendField(b, "diagnostics"), f.Diagnostics)
	}
	if f.Told != "" {
		b = appendStringField(b, "told", f.Told)
	}
	b = appendStringField(b, "timestamp", f.Timestamp)
	b = appendStringField(b, "message_id", f.MessageID)
	return append(b, '}')
}

// AppendJSON appends the JSON of c.
func (c Complete) AppendJSON(b []byte) []byte {
	b = c.openHead(b)
	b = appendStringField(b, "thread_id", c.ThreadID)
	if c.Error != "" {
		b = appendStringField(b, "error", c.Error)
	}
	b = appendStringField(b, "timestamp", c.Timestamp)
	b = appendStringField(b, "message_id", c.MessageID)
	return append(b, '}')
}

// AppendJSON appends the JSON of d.
func (d Delta) AppendJSON(b []byte) []byte {
	b = d.openHead(b)
	b = appendStringField(b, "thread_id", d.ThreadID)
	b = appendStringField(b, "agent", d.Agent)
	b = appendStringField(b, "text", d.Text)
	if d.End {
		b = append(appendField(b, "end"), "true"...)
	}
	return append(b, '}')
}
