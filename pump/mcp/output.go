package mcp

import (
	"fmt"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
)

// outputSchema is the output schema of a tool whose listener declares its
// response (pump.Listener.Response): the JSON Schema of the response
// payload, derived as the input schema is (numbers, integers, booleans,
// strings, arrays for repeated elements). nil when none is declared.
func outputSchema(rt *xmlpipe.PayloadType) map[string]any {
	if rt == nil {
		return nil
	}
	return gen.JSONSchema(rt.Model())
}

// structured returns the structured content of an answer whose payload is
// the declared response rt: the payload decoded and given its JSON form
// (codec.JSONOf), which fits outputSchema(rt). It fails when the payload
// is not rt's.
func structured(rt *xmlpipe.PayloadType, a Answer) (map[string]any, error) {
	if a.Name != rt.Name() {
		return nil, fmt.Errorf("answered <%s>, not its declared response <%s>", a.Name, rt.Name())
	}
	v, err := rt.Decode(a.XML)
	if err != nil {
		return nil, fmt.Errorf("answer <%s> does not decode: %w", a.Name, err)
	}
	return codec.JSONOf(rt.Model(), v)
}
