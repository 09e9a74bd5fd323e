package bus

import (
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// decodeRequest decodes a /ws client frame exactly as decodeJSON does,
// without reflection for the frames clients send most: a flat object
// (wire.ScanFlat) of known keys whose values are strings or, for "id", an
// integer or a string — `{"type":"send","id":7,"raw":"@greeter Dan"}`.
// Anything else (escapes, unknown or differently cased keys, arrays,
// objects, null, other numbers, malformed JSON) goes to decodeJSON, which
// also gives the errors: both decoders agree on every input
// (FuzzDecodeRequest). It returns the request rather than filling the
// caller's: a frame that takes the fast path stays off the heap
// (decodeJSON's pointer would make every request escape).
func decodeRequest(data []byte) (wire.Request, error) {
	var req wire.Request
	if fastRequest(data, &req) {
		return req, nil
	}
	p := new(wire.Request)
	err := decodeJSON(data, p)
	return *p, err
}

// requestTypes are the request types a client sends: a decoded type that
// is one of them is this string, not a copy of the frame's bytes.
var requestTypes = []string{wire.TypeSend, wire.TypePing, wire.TypeStatus, wire.TypeSubscribe, wire.TypeListeners,
	wire.TypeTargets, wire.TypeThreads, wire.TypeMonitor, wire.TypeUsage}

// internRequestType returns typ as a string, one of requestTypes when it
// is one.
func internRequestType(typ []byte) string {
	for _, t := range requestTypes {
		if string(typ) == t {
			return t
		}
	}
	return string(typ)
}

// fastRequest decodes data into req when it is the simple form
// decodeRequest describes, and reports whether it was. req is untouched
// when it was not.
func fastRequest(data []byte, req *wire.Request) bool {
	var r wire.Request
	ok := wire.ScanFlat(data, func(key, val []byte, str bool) bool {
		if string(key) == "id" {
			if str {
				r.ID = append(append(append(make([]byte, 0, len(val)+2), '"'), val...), '"')
			} else {
				r.ID = append([]byte(nil), val...)
			}
			return true
		}
		if !str {
			return false
		}
		if string(key) == "type" {
			r.Type = internRequestType(val)
			return true
		}
		return setRequestField(&r, key, string(val))
	})
	if ok {
		*req = r
	}
	return ok
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
