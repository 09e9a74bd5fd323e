package mcpclient

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// FuzzFill feeds arbitrary tool results (the JSON an external MCP server
// answers a call with) to fill: whatever it holds, the ToolResult encodes
// as its payload, under the pump's default size cap, and decodes again.
func FuzzFill(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a <b>red</b> dot"}]}`,
		`{"isError":true,"content":[{"type":"text","text":"\u0001\u0000\ufffe bad chars"}]}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"audio","mimeType":"\u0002","data":""}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"mem://\u0003","mimeType":"text/plain","text":"x\u0000y"}}],"structuredContent":{"k":"\u0004"}}`,
		`{"content":[{"type":"resource_link","uri":"file:///\u0005","name":"\u0006","title":"t","description":"d","mimeType":"m","size":-1}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"mem://b","blob":"AAEC"}}],"structuredContent":[1,"two",null]}`,
	} {
		f.Add([]byte(s))
	}
	pt, err := xmlpipe.NewPayloadType(reflect.TypeFor[ToolResult]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r sdk.CallToolResult
		if json.Unmarshal(b, &r) != nil {
			return
		}
		res := &ToolResult{Tool: "t"}
		fill(res, &r)
		out, err := pt.AppendPayload(nil, res)
		if err != nil {
			t.Fatalf("result of %s does not encode: %v", b, err)
		}
		if len(out) > 1<<20 {
			t.Fatalf("result of %d bytes encodes to %d, over the size cap", len(b), len(out))
		}
		if _, err := pt.Decode(out); err != nil {
			t.Fatalf("result %s does not decode: %v", out, err)
		}
	})
}
