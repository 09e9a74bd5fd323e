package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxRequestBody caps a JSON request body (login, inject).
const maxRequestBody = 2 << 20

// errorBody is every JSON error response: {"error": "..."} plus, for a
// message the organism refused, the canned text's diagnostics.
type errorBody struct {
	Error       string   `json:"error"`
	Diagnostics []string `json:"diagnostics,omitempty"`
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

// errBadJSON is a request body that is not the expected JSON.
var errBadJSON = errors.New("invalid JSON")

// readJSON decodes the request body (capped) into v.
func readJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return fmt.Errorf("%w: %w", errBadJSON, err)
	}
	if len(body) > maxRequestBody {
		return fmt.Errorf("%w: body exceeds %d bytes", errBadJSON, maxRequestBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", errBadJSON, err)
	}
	return nil
}
