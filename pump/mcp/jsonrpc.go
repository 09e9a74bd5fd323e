package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
)

// JSON-RPC 2.0 error codes this package answers with itself.
const (
	codeParseError     = jsonrpc.CodeParseError     // -32700: not JSON
	codeInvalidRequest = jsonrpc.CodeInvalidRequest // -32600: JSON, but not a request
	codeServerBusy     = -32000                     // a server error: no room for another session
)

// noBatchesSince is the first MCP protocol version without JSON-RPC batches.
const noBatchesSince = "2025-06-18"

// maxSafeID bounds numeric request ids: the SDK holds them as float64 on the
// way in, so larger ones could not be echoed exactly.
const maxSafeID = 1<<53 - 1

// rpcError is an error response this package writes itself (the SDK never
// sees the message it answers). ID is the request's id as it was written,
// or nil for null (the id could not be read).
type rpcError struct {
	ID      json.RawMessage
	Code    int64
	Message string
}

// MarshalJSON writes the JSON-RPC response object, "id": null included.
func (e rpcError) MarshalJSON() ([]byte, error) {
	id := e.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{e.Code, e.Message}})
}

// parsedLine is what one line of input holds: the valid messages in order,
// the answers to the invalid ones, and whether it was a batch (an array),
// whose answers must travel together as one array.
type parsedLine struct {
	msgs  []jsonrpc.Message
	errs  []rpcError
	batch bool
}

// parseLine validates one line (one JSON-RPC message or batch) before the
// SDK sees it: JSON text that is not UTF-8 or not JSON is a parse error
// (-32700); a value that is not a JSON-RPC 2.0 request, notification or
// response (e.g. {"foo":1}, "jsonrpc":"1.0", an id that is not a string or
// an integer, params that are not structured), an empty batch or a batch
// when batchesAllowed is false is an invalid request (-32600). Each element
// of a batch is judged alone.
func parseLine(line []byte, batchesAllowed bool, version string) parsedLine {
	if err := codec.CheckJSONText(line); err != nil {
		return parsedLine{errs: []rpcError{{ID: recoverID(line), Code: codeParseError, Message: "Parse error: " + err.Error()}}}
	}
	if !json.Valid(line) {
		return parsedLine{errs: []rpcError{{Code: codeParseError, Message: "Parse error: " + syntaxError(line)}}}
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return parsedLine{errs: []rpcError{{Code: codeParseError, Message: "Parse error: empty message"}}}
	}
	if trimmed[0] != '[' {
		msg, rerr := parseMessage(trimmed)
		if rerr != nil {
			return parsedLine{errs: []rpcError{*rerr}}
		}
		return parsedLine{msgs: []jsonrpc.Message{msg}}
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		return parsedLine{errs: []rpcError{{Code: codeParseError, Message: "Parse error: " + err.Error()}}}
	}
	switch {
	case len(elems) == 0:
		return parsedLine{errs: []rpcError{{Code: codeInvalidRequest, Message: "Invalid Request: empty batch"}}}
	case !batchesAllowed:
		return parsedLine{errs: []rpcError{{Code: codeInvalidRequest,
			Message: fmt.Sprintf("Invalid Request: JSON-RPC batches are not allowed in protocol version %s", version)}}}
	}
	p := parsedLine{batch: true}
	for _, e := range elems {
		msg, rerr := parseMessage(e)
		if rerr != nil {
			p.errs = append(p.errs, *rerr)
			continue
		}
		p.msgs = append(p.msgs, msg)
	}
	return p
}

// parseMessage validates one JSON-RPC message (valid JSON) and decodes it.
func parseMessage(raw json.RawMessage) (jsonrpc.Message, *rpcError) {
	invalid := func(id json.RawMessage, format string, args ...any) *rpcError {
		return &rpcError{ID: id, Code: codeInvalidRequest, Message: "Invalid Request: " + fmt.Sprintf(format, args...)}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid(nil, "want a JSON object")
	}
	idRaw, hasID := m["id"]
	var id json.RawMessage // the id to answer with: nil unless it is usable
	if hasID {
		if err := checkID(idRaw); err != nil {
			return nil, invalid(nil, "%v", err)
		}
		id = idRaw
	}
	if v, ok := m["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return nil, invalid(id, `"jsonrpc" must be "2.0"`)
	}
	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case hasMethod:
		var name string
		if json.Unmarshal(method, &name) != nil || name == "" {
			return nil, invalid(id, `"method" must be a non-empty string`)
		}
		if hasResult || hasError {
			return nil, invalid(id, "a request has no result or error")
		}
		if params, ok := m["params"]; ok {
			if t := bytes.TrimSpace(params); len(t) == 0 || (t[0] != '{' && t[0] != '[') {
				return nil, invalid(id, `"params" must be an object or an array`)
			}
		}
	case !hasID:
		return nil, invalid(nil, `want a request ("method" and "id"), a notification ("method") or a response ("id" and "result" or "error")`)
	case hasResult == hasError:
		return nil, invalid(id, `a response has exactly one of "result" and "error"`)
	}
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return nil, invalid(id, "%v", err)
	}
	return msg, nil
}

// checkID accepts a request id MCP allows: a string, or an integer the SDK
// can echo exactly. Null is refused (MCP: "the ID MUST NOT be null").
func checkID(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) > 0 && t[0] == '"':
		return nil
	case len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9'):
		n, err := strconv.ParseInt(string(t), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			return fmt.Errorf(`"id" %s: want a string or an integer within ±2^53`, t)
		}
		return nil
	}
	return fmt.Errorf(`"id" must be a string or an integer, not %s`, clip(string(t), 40))
}

// recoverID returns the id of a line that is JSON but not UTF-8, when it can
// be read and echoed (nil otherwise).
func recoverID(line []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	id := m["id"]
	if id == nil || codec.CheckJSONText(id) != nil || checkID(id) != nil {
		return nil
	}
	return id
}

// syntaxError describes why line is not JSON.
func syntaxError(line []byte) string {
	var v any
	err := json.Unmarshal(line, &v)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%v (byte %d)", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "not JSON"
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
