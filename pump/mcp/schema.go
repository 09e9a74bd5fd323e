package mcp

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// toolSchema is a tool's advertised input schema and its compiled form.
type toolSchema struct {
	// advertised is gen.JSONSchema of the payload type.
	advertised map[string]any
	// resolved checks the keywords codec.AppendJSON does not (minimum,
	// pattern, minItems, the schema of JSON-valued fields, …); nil when
	// the schema cannot be compiled (logged once).
	resolved *jsonschema.Resolved
}

// schema returns (once per payload type) the schema of listener's tool.
func (b *Bridge) schema(listener string, pt *xmlpipe.PayloadType) *toolSchema {
	if s, ok := b.schemas.Load(pt); ok {
		return s.(*toolSchema)
	}
	ts := &toolSchema{advertised: gen.JSONSchema(pt.Model())}
	var js jsonschema.Schema
	raw, err := json.Marshal(ts.advertised)
	if err == nil {
		err = json.Unmarshal(raw, &js)
	}
	if err == nil {
		ts.resolved, err = js.Resolve(nil)
	}
	if err != nil {
		b.opts.Logger.Warn("mcp: input schema not checked beyond its types", "listener", listener, "error", err)
	}
	s, _ := b.schemas.LoadOrStore(pt, ts)
	return s.(*toolSchema)
}

// check validates arguments (already accepted by codec.AppendJSON) against
// the keywords of the advertised schema.
func (s *toolSchema) check(args []byte) error {
	if s.resolved == nil {
		return nil
	}
	var v any = map[string]any{}
	if t := bytes.TrimSpace(args); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(t, &v); err != nil {
			return err
		}
	}
	if err := s.resolved.Validate(v); err != nil {
		return schemaError{err}
	}
	return nil
}

// schemaError words a validation failure without the validator's prefix
// ("validating root: validating /properties/Limit: minimum: …" reads
// "/properties/Limit: minimum: …").
type schemaError struct{ err error }

func (e schemaError) Error() string {
	msg := e.err.Error()
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		_, after, ok := strings.Cut(rest, ": ")
		if !ok || !strings.HasPrefix(after, "validating ") {
			msg = rest
			break
		}
		msg = after
	}
	// The validator prints numbers as fractions (-1/1) and bounds with six
	// decimals (0.000000).
	msg = wholeFraction.ReplaceAllString(msg, "$1")
	return zeroDecimals.ReplaceAllString(msg, "$1$2")
}

var (
	wholeFraction = regexp.MustCompile(`(-?\d+)/1\b`)
	zeroDecimals  = regexp.MustCompile(`(\d+)(?:\.0+|(\.\d*[1-9])0+)\b`)
)

func (e schemaError) Unwrap() error { return e.err }
