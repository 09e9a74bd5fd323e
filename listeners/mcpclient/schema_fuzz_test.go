package mcpclient

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// FuzzToolSchema mounts a tool whose input schema is arbitrary JSON: an
// external MCP server is untrusted, and its schema becomes a Go type, an
// XSD, an example and a JSON Schema. No schema may panic; a tool that
// mounts has a payload whose own example decodes, and whose decoded value
// the handler turns into arguments.
func FuzzToolSchema(f *testing.F) {
	f.Add("search", searchSchema)
	f.Add("t", `{"type":"object"}`)
	f.Add("t", `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}},"required":["a"]}`)
	f.Add("t", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":["integer","null"]}},"additionalProperties":false}}},"required":["a"]}`)
	f.Add("t", `{"properties":{"x":{"enum":["a\u0001","b"]},"d":{"type":"string","description":"\u0000\ufffe"}}}`)
	f.Add("t", `{"type":"object","properties":{"a":{"type":"object","properties":{"a":{"type":"object","properties":{"a":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}},"additionalProperties":false}},"additionalProperties":false}},"required":"a"}`)
	f.Add("bad name", `{"type":"object","properties":{"1x":{}}}`)
	f.Fuzz(func(t *testing.T, name, schema string) {
		var v any
		if json.Unmarshal([]byte(schema), &v) != nil {
			return
		}
		m := &Mount{o: Options{Name: "fz"}}
		tool, err := m.mountTool(&sdk.Tool{Name: name, InputSchema: v})
		if err != nil {
			return
		}
		h := tool.Handler.(*handler)
		_ = gen.JSONSchema(h.model)
		example := tool.Payload.Example()
		decoded, err := tool.Payload.Decode(example)
		if err != nil {
			// The example is derived from the same model: it must decode.
			t.Fatalf("example %s of schema %s does not decode: %v", example, schema, err)
		}
		if _, err := h.arguments(decoded); err != nil {
			t.Fatalf("arguments of the example %s: %v", example, err)
		}
	})
}
