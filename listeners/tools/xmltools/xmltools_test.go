package xmltools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

func TestXMLToJSON(t *testing.T) {
	tests := []struct {
		xml      string
		keepRoot bool
		want     string
	}{
		{`<r><a>1</a><b>2.5</b><c>TRUE</c><d/><e>x</e></r>`, false, `{"a":1,"b":2.5,"c":true,"d":null,"e":"x"}`},
		{`<r><i>1</i><i>2</i></r>`, true, `{"r":{"i":[1,2]}}`},
		{`<r id="7"><a unit="m">3</a></r>`, false, `{"@id":"7","a":{"#text":3,"@unit":"m"}}`},
		{`<r>hi</r>`, false, `"hi"`},
	}
	for _, tc := range tests {
		got, err := XMLToJSONText(tc.xml, tc.keepRoot)
		if err != nil {
			t.Fatalf("%s: %v", tc.xml, err)
		}
		var g, w any
		_ = json.Unmarshal([]byte(got), &g)
		_ = json.Unmarshal([]byte(tc.want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %s, want %s", tc.xml, got, tc.want)
		}
	}
	for _, bad := range []string{"<r>", "", "<a/><b/>", `<!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>`, "text"} {
		if _, err := XMLToJSONText(bad, false); err == nil || !strings.Contains(err.Error(), "invalid XML") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestJSONToXML(t *testing.T) {
	tests := []struct {
		json, root string
		pretty     bool
		want       string
	}{
		{`{"b":1,"a":"x<y","@id":"7","n":null,"t":true}`, "", false, `<data id="7"><b>1</b><a>x&lt;y</a><n/><t>true</t></data>`},
		{`{"i":[1,2]}`, "list", false, `<list><i>1</i><i>2</i></list>`},
		{`[1,{"k":"v"}]`, "", false, `<data><item>1</item><item><k>v</k></item></data>`},
		{`{"a":{"#text":"t","@u":"m"}}`, "", false, `<data><a u="m">t</a></data>`},
		{`{"a":{"b":1}}`, "", true, "<data>\n  <a>\n    <b>1</b>\n  </a>\n</data>"},
	}
	for _, tc := range tests {
		got, err := JSONToXMLText(tc.json, tc.root, tc.pretty)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.json, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ json, root, want string }{
		{`{"a b":1}`, "", "not a valid XML name"},
		{`{"a":1}`, "1x", "not a valid XML name"},
		{`{"a":[[1]]}`, "", "nested arrays"},
		{`{"a":`, "", "invalid JSON"},
		{`{} {}`, "", "trailing data"},
		{`{"@a":{"b":1}}`, "", "must be a scalar"},
	} {
		if _, err := JSONToXMLText(bad.json, bad.root, false); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.json, err, bad.want)
		}
	}
}

func TestTools(t *testing.T) {
	tool := &Tool{Policy: tools.Fixed(tools.Config{MaxBytes: 200})}
	ctx, md := context.Background(), xmlpipe.Metadata{From: "agent"}
	resp, _ := tool.Extract(ctx, &XMLExtract{XML: `<r xmlns:x="urn:x"><x:a n="1">one</x:a><x:a n="2">two</x:a></r>`,
		XPath: "//y:a[@n>1]", Namespaces: []Namespace{{Prefix: "y", URI: "urn:x"}}}, md)
	r := resp.(*xmlpipe.RespondResponse).Payload.(*XMLExtractResult)
	if r.Error != "" || r.Count != 1 || r.Matches[0].Value != "two" || r.Matches[0].XML != `<x:a xmlns:x="urn:x" n="2">two</x:a>` {
		t.Fatalf("extract: %+v", r)
	}
	resp, _ = tool.Extract(ctx, &XMLExtract{XML: `<r><a>1</a><a>2</a></r>`, XPath: "sum(//a)"}, md)
	if r := resp.(*xmlpipe.RespondResponse).Payload.(*XMLExtractResult); r.Type != "number" || r.Value != "3" {
		t.Fatalf("sum: %+v", r)
	}
	for _, tc := range []struct {
		p    XMLExtract
		want string
	}{
		{XMLExtract{XML: "<r/>", XPath: "//["}, "xpath: invalid expression"},
		{XMLExtract{XML: "<r>", XPath: "//r"}, "not a well-formed XML document"},
		{XMLExtract{XML: "<r>" + strings.Repeat("x", 300) + "</r>", XPath: "//r"}, "max: 200"},
		{XMLExtract{XML: "<r>" + strings.Repeat("<a>xxxxxxxxxxxxxxxxxxxx</a>", 6) + "</r>", XPath: "//a"}, "result too large"},
	} {
		resp, _ := tool.Extract(ctx, &tc.p, md)
		if r := resp.(*xmlpipe.RespondResponse).Payload.(*XMLExtractResult); !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s: %+v, want %q", tc.p.XPath, r, tc.want)
		}
	}
	resp, _ = tool.XMLToJSON(ctx, &XMLToJSON{XML: "<r><a>1</a></r>"}, md)
	if r := resp.(*xmlpipe.RespondResponse).Payload.(*XMLToJSONResult); r.Error != "" || !strings.Contains(r.JSON, `"a": 1`) {
		t.Fatalf("xml_to_json: %+v", r)
	}
	resp, _ = tool.JSONToXML(ctx, &JSONToXML{JSON: `{"a":1}`, RootTag: "r"}, md)
	if r := resp.(*xmlpipe.RespondResponse).Payload.(*JSONToXMLResult); r.Error != "" || r.XML != "<r><a>1</a></r>" {
		t.Fatalf("json_to_xml: %+v", r)
	}
	resp, _ = tool.JSONToXML(ctx, &JSONToXML{JSON: `{"a":"` + strings.Repeat("x", 300) + `"}`}, md)
	if r := resp.(*xmlpipe.RespondResponse).Payload.(*JSONToXMLResult); !strings.Contains(r.Error, "max: 200") {
		t.Fatalf("json_to_xml cap: %+v", r)
	}
}

// TestExtractIsBounded: the handler's deadline stops an evaluation libxml2
// would run for 12 s or more, and a node-set stops once past max_bytes
// instead of being built in full (//* over 250 nested elements around
// 250 KB of text: about 125 MiB) and weighed afterwards.
func TestExtractIsBounded(t *testing.T) {
	slow := "<r>" + strings.Repeat("<a/>", 1500) + strings.Repeat("x", 100<<10) + "</r>"
	nested := strings.Repeat("<a>", 250) + strings.Repeat("x", 250<<10) + strings.Repeat("</a>", 250)
	for _, tc := range []struct {
		name, xml, xpath string
		timeout          time.Duration
		want             string
	}{
		{"deadline", slow, "count(//*[//*[string(/)='y']])", 50 * time.Millisecond,
			"xpath: evaluation stopped: context deadline exceeded"},
		{"nested node-set", nested, "//*", time.Hour,
			"xpath: result too large: the first 2 of 250 nodes pass 262144 bytes (names and string-values)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			resp, err := (&Tool{}).Extract(ctx, &XMLExtract{XML: tc.xml, XPath: tc.xpath}, xmlpipe.Metadata{From: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			r := resp.(*xmlpipe.RespondResponse).Payload.(*XMLExtractResult)
			if diff := cmp.Diff(tc.want, r.Error); diff != "" || r.Matches != nil {
				t.Fatalf("error (-want +got):\n%s\nmatches: %d", diff, len(r.Matches))
			}
		})
	}
}

// TestAnswersFitTheSizeCap: results within max_bytes that the answer
// carries escaped, or as many small matches, to past the pump's default
// message size cap are refused with a reason; the answer, to a console or
// to an agent (which gets JSON as text), stays under the cap.
func TestAnswersFitTheSizeCap(t *testing.T) {
	type agentInput struct{ Text string }
	agentType, err := xmlpipe.PayloadTypeOf[agentInput]()
	if err != nil {
		t.Fatal(err)
	}
	callers := tools.CallersFunc(func(name string) (*xmlpipe.PayloadType, bool) { return agentType, name == "agent" })
	many := "<r>" + strings.Repeat("<b>1</b>", 30000) + "</r>"
	lt := "<r>" + strings.Repeat("&lt;", 200000) + "</r>"
	for _, tc := range []struct {
		name    string
		max     int
		run     func(*Tool, xmlpipe.Metadata) xmlpipe.Response
		wantErr string
	}{
		{name: "a few matches", run: func(tool *Tool, md xmlpipe.Metadata) xmlpipe.Response {
			r, _ := tool.Extract(context.Background(), &XMLExtract{XML: many, XPath: "//b[position() < 100]/text()"}, md)
			return r
		}},
		{name: "thirty thousand tiny matches", run: func(tool *Tool, md xmlpipe.Metadata) xmlpipe.Response {
			r, _ := tool.Extract(context.Background(), &XMLExtract{XML: many, XPath: "//b/text()"}, md)
			return r
		}, wantErr: "the result is"},
		{name: "json of escaped text", max: 4 << 20, run: func(tool *Tool, md xmlpipe.Metadata) xmlpipe.Response {
			r, _ := tool.XMLToJSON(context.Background(), &XMLToJSON{XML: lt}, md)
			return r
		}, wantErr: "the JSON is"},
		{name: "xml of escaped text", max: 4 << 20, run: func(tool *Tool, md xmlpipe.Metadata) xmlpipe.Response {
			r, _ := tool.JSONToXML(context.Background(), &JSONToXML{JSON: `{"a":"` + strings.Repeat("<", 200000) + `"}`}, md)
			return r
		}, wantErr: "the XML is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := &Tool{Policy: tools.Fixed(tools.Config{MaxBytes: tc.max}), Callers: callers}
			for _, from := range []string{"console", "agent"} {
				payload := tc.run(tool, xmlpipe.Metadata{From: from}).(*xmlpipe.RespondResponse).Payload
				pt, err := xmlpipe.NewPayloadType(reflect.TypeOf(payload).Elem())
				if err != nil {
					t.Fatal(err)
				}
				b, err := pt.AppendPayload(nil, payload)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) >= stage.DefaultMaxBytes {
					t.Errorf("%s: the answer is %d bytes, over the %d-byte message cap", from, len(b), stage.DefaultMaxBytes)
				}
				if from != "console" {
					continue
				}
				got := reflect.ValueOf(payload).Elem().FieldByName("Error").String()
				if !strings.HasPrefix(got, tc.wantErr) || (tc.wantErr != "") != (got != "") {
					t.Errorf("error %q, want %q", got, tc.wantErr)
				}
			}
		})
	}
}
