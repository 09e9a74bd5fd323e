package gen

import (
	"encoding/json"
	"encoding/xml"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExampleJSONFieldIsJSON: the example of an encoding:"json" field is one
// JSON value — what its element must hold — chosen from its schema, never
// the plain text a string field shows (which a JSON ingress, an MCP server or
// a model copying the example would get refused).
func TestExampleJSONFieldIsJSON(t *testing.T) {
	type JSONFields struct {
		XMLName  xml.Name `xml:"JSONFields"`
		Free     *string  `xml:",omitempty" encoding:"json" doc:"free-form"`
		Object   string   `encoding:"json" jsonschema:"{\"type\":\"object\"}"`
		List     string   `encoding:"json" jsonschema:"{\"type\":[\"array\",\"null\"]}"`
		Count    string   `encoding:"json" jsonschema:"{\"type\":\"integer\"}"`
		Flag     string   `encoding:"json" jsonschema:"{\"type\":\"boolean\"}"`
		Default  string   `encoding:"json" jsonschema:"{\"default\":{\"a\":[1,2]}}"`
		Enum     string   `encoding:"json" jsonschema:"{\"enum\":[\"a\\u0001<b\",\"c\"]}"`
		Constant string   `encoding:"json" jsonschema:"{\"const\":3}"`
		Text     string   `encoding:"json" jsonschema:"{\"type\":\"string\"}" doc:"a name"`
	}
	ty, err := Describe(reflect.TypeFor[JSONFields]())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Free, Object, List, Count, Flag, Default, Enum, Constant, Text string
	}
	if err := xml.Unmarshal(Example(ty), &got); err != nil {
		t.Fatalf("example %s: %v", Example(ty), err)
	}
	want := map[string]string{"Free": `"free-form"`, "Object": `{}`, "List": `[]`, "Count": `1`, "Flag": `true`,
		"Default": `{"a":[1,2]}`, "Enum": `"a\u0001<b"`, "Constant": `3`, "Text": `"a name"`}
	values := map[string]string{"Free": got.Free, "Object": got.Object, "List": got.List, "Count": got.Count,
		"Flag": got.Flag, "Default": got.Default, "Enum": got.Enum, "Constant": got.Constant, "Text": got.Text}
	for name, v := range values {
		if !json.Valid([]byte(v)) {
			t.Errorf("%s: example %q is not JSON", name, v)
		}
	}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("examples (-want +got):\n%s", diff)
	}
}
