package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// maxRequestBody caps a JSON request body (login, inject).
const maxRequestBody = 2 << 20

// errorBody is every JSON error response: {"error": "..."} plus, for a
// message the organism refused, the canned text's diagnostics, and for one
// it was too busy to take, the seconds after which to retry.
type errorBody struct {
	Error       string   `json:"error"`
	Diagnostics []string `json:"diagnostics,omitempty"`
	RetryAfter  int      `json:"retry_after,omitempty"`
}

// writeJSON writes v as the JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"Internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// internalError logs a failure the client cannot fix (msg, the attributes
// args, then the error) and answers 500 {"error":"Internal error"}.
func (s *Server) internalError(w http.ResponseWriter, msg string, err error, args ...any) {
	s.log.Error(msg, append(args, "error", err)...)
	writeError(w, http.StatusInternalServerError, "Internal error")
}

// Errors of a JSON body or frame that cannot be decoded.
var (
	// errBadJSON is a request body that is not the expected JSON.
	errBadJSON = errors.New("invalid JSON")
	// errBodyTooLarge is a request body over maxRequestBody (413).
	errBodyTooLarge = errors.New("request body too large")
	// errJSONUTF8 is JSON text that is not valid UTF-8, or a string
	// escaping half of a surrogate pair (\ud800 alone): encoding/json would
	// silently turn either into U+FFFD.
	errJSONUTF8 = errors.New("JSON text is not valid UTF-8")
)

// readJSON decodes the request body (capped at maxRequestBody) into v. Its
// errors wrap errBodyTooLarge, errJSONUTF8 or errBadJSON.
func readJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return fmt.Errorf("%w: %w", errBadJSON, err)
	}
	if len(body) > maxRequestBody {
		return fmt.Errorf("%w: over %d bytes", errBodyTooLarge, maxRequestBody)
	}
	return decodeJSON(body, v)
}

// decodeJSON decodes data into v, refusing text encoding/json would alter
// silently: invalid UTF-8 and unpaired surrogate escapes (errJSONUTF8).
func decodeJSON(data []byte, v any) error {
	if !utf8.Valid(data) || !surrogatesPaired(data) {
		return errJSONUTF8
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %w", errBadJSON, err)
	}
	return nil
}

// surrogatesPaired reports whether every \u escape of a UTF-16 surrogate in
// data is a high surrogate immediately followed by a low one. Escapes are
// consumed in pairs (a backslash and the next byte), so an escaped backslash
// never starts one; malformed escapes are left to the JSON decoder.
func surrogatesPaired(data []byte) bool {
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := escapedRune(data, i)
		switch {
		case !ok:
			i++ // \x: skip the escaped byte
		case r >= 0xdc00 && r <= 0xdfff:
			return false // a low surrogate alone
		case r >= 0xd800 && r <= 0xdbff:
			lo, ok := escapedRune(data, i+6)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return false // a high surrogate alone
			}
			i += 11
		default:
			i += 5
		}
	}
	return true
}

// escapedRune decodes the \uXXXX escape at data[i:] (ok false: none there).
func escapedRune(data []byte, i int) (rune, bool) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range data[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// jsonErrorText is the client's error text for a JSON decoding error.
func jsonErrorText(err error) string {
	if errors.Is(err, errJSONUTF8) {
		return "Invalid JSON: not valid UTF-8"
	}
	return "Invalid JSON"
}

// writeReadError answers a request whose JSON body readJSON refused: 413
// for an oversized body, else 400 (see jsonErrorText).
func writeReadError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBodyTooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body too large: limit %d bytes", maxRequestBody))
		return
	}
	writeError(w, http.StatusBadRequest, jsonErrorText(err))
}
