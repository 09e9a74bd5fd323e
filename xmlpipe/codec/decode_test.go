package codec

import (
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeExactStrings covers reference quirk Q13: strings are kept exactly as
// sent, never type-inferred or trimmed.
func TestDecodeExactStrings(t *testing.T) {
	c := mustCodec[Greeting](t)
	tests := []struct {
		name, xml, want string
	}{
		{"leading zeros", `<Greeting><Name>007</Name></Greeting>`, "007"},
		{"boolean-looking", `<Greeting><Name>true</Name></Greeting>`, "true"},
		{"decimal-looking", `<Greeting><Name>1.50</Name></Greeting>`, "1.50"},
		{"exponent-looking", `<Greeting><Name>1e3</Name></Greeting>`, "1e3"},
		{"whitespace kept", "<Greeting><Name>  Dan \t\n</Name></Greeting>", "  Dan \t\n"},
		{"only whitespace", `<Greeting><Name>   </Name></Greeting>`, "   "},
		{"empty", `<Greeting><Name></Name></Greeting>`, ""},
		{"self-closing", `<Greeting><Name/></Greeting>`, ""},
		{"entities", `<Greeting><Name>&lt;a&gt; &amp; &quot;b&quot; &apos;c&apos;</Name></Greeting>`, `<a> & "b" 'c'`},
		{"char refs", `<Greeting><Name>&#65;&#x42;&#x1F600;&#xD;</Name></Greeting>`, "AB😀\r"},
		{"line ends normalised", "<Greeting><Name>a\r\nb\rc</Name></Greeting>", "a\nb\nc"},
		{"cdata", `<Greeting><Name>x<![CDATA[<not a tag> & ]]>y</Name></Greeting>`, "x<not a tag> & y"},
		{"comment and PI skipped", `<Greeting><Name>a<!-- c -->b<?pi x?>c</Name></Greeting>`, "abc"},
		{"non-ASCII", `<Greeting><Name>Zoë 日本 😀</Name></Greeting>`, "Zoë 日本 😀"},
		{"greater-than", `<Greeting><Name>a > b ]] c</Name></Greeting>`, "a > b ]] c"},
		{"xmlns empty", `<Greeting xmlns=""><Name>Dan</Name></Greeting>`, "Dan"},
		{"prolog and epilog", "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- c --><Greeting><Name>Dan</Name></Greeting>\n<?pi?>\n", "Dan"},
		{"whitespace between elements", "<Greeting>\n  <Name>Dan</Name>\n</Greeting >", "Dan"},
		{"xsi attributes ignored", `<Greeting xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="g.xsd"><Name>Dan</Name></Greeting>`, "Dan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Decode([]byte(tt.xml))
			if err != nil {
				t.Fatal(err)
			}
			if g := got.(*Greeting).Name; g != tt.want {
				t.Errorf("Name = %q, want %q", g, tt.want)
			}
		})
	}
}

func TestDecodeAttributeNormalisation(t *testing.T) {
	c := mustCodec[Item](t)
	tests := []struct{ xml, want string }{
		{"<Item sku=\"a\tb\nc\r\nd\re\"><Count>1</Count><Unit>1</Unit></Item>", "a b c d e"},
		{`<Item sku="a&#9;b&#xA;c&#xD;d"><Count>1</Count><Unit>1</Unit></Item>`, "a\tb\nc\rd"},
		{`<Item sku='single "quoted"'><Count>1</Count><Unit>1</Unit></Item>`, `single "quoted"`},
		{`<Item sku = " 007 "><Count>1</Count><Unit>1</Unit></Item>`, " 007 "},
	}
	for _, tt := range tests {
		got, err := c.Decode([]byte(tt.xml))
		if err != nil {
			t.Fatalf("%s: %v", tt.xml, err)
		}
		if g := got.(*Item).SKU; g != tt.want {
			t.Errorf("%s: sku = %q, want %q", tt.xml, g, tt.want)
		}
	}
}

// TestDecodeValues checks the lexical forms of every non-string kind.
func TestDecodeValues(t *testing.T) {
	c := mustCodec[AllKinds](t)
	tests := []struct {
		field, text string
		want        any
	}{
		{"I", " +42 ", 42},
		{"I", "\n-0007\t", -7},
		{"I", "9223372036854775807", math.MaxInt64},
		{"I", "-9223372036854775808", math.MinInt64},
		{"I8", "-128", int8(-128)},
		{"I8", "127", int8(127)},
		{"I16", "-32768", int16(-32768)},
		{"I32", "2147483647", int32(math.MaxInt32)},
		{"U", "-0", uint(0)},
		{"U", "+18446744073709551615", uint(math.MaxUint64)},
		{"U8", "0255", uint8(255)},
		{"U16", "65535", uint16(65535)},
		{"U32", "4294967295", uint32(math.MaxUint32)},
		{"U64", " 18446744073709551615 ", uint64(math.MaxUint64)},
		{"F64", "INF", math.Inf(1)},
		{"F64", "-INF", math.Inf(-1)},
		{"F64", "1.5E3", 1500.0},
		{"F64", ".5", 0.5},
		{"F64", "5.", 5.0},
		{"F64", "-0", math.Copysign(0, -1)},
		{"F64", "1e-400", 0.0},
		{"F32", " 3.4028235e+38 ", float32(math.MaxFloat32)},
		{"F32", "NaN", float32(math.NaN())},
		{"B", "1", true},
		{"B", " true ", true},
		{"B", "0", false},
		{"B", "false", false},
		{"T", "2026-01-18T12:00:00Z", time.Date(2026, 1, 18, 12, 0, 0, 0, time.UTC)},
		{"T", " 2026-01-18T12:00:00.5+02:00 ", time.Date(2026, 1, 18, 10, 0, 0, 5e8, time.UTC)},
		{"T", "2026-01-18T12:00:00", time.Date(2026, 1, 18, 12, 0, 0, 0, time.UTC)},
		{"T", "0001-01-01T00:00:00-14:00", time.Date(1, 1, 1, 14, 0, 0, 0, time.UTC)},
		{"Raw", " cmF3 ", []byte("raw")},
		{"Raw", "Y W\nJ j", []byte("abc")},
		{"Raw", "", []byte(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.text, func(t *testing.T) {
			got, err := c.Decode([]byte(allKindsWith(tt.field, tt.text)))
			if err != nil {
				t.Fatal(err)
			}
			v := reflect.ValueOf(got).Elem().FieldByName(tt.field).Interface()
			if diff := cmp.Diff(tt.want, v, equalOpts); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if f, ok := tt.want.(float64); ok && math.Signbit(f) != math.Signbit(v.(float64)) {
				t.Errorf("sign of zero lost")
			}
		})
	}
}

// allKindsWith builds a valid AllKinds document whose element field has text.
func allKindsWith(field, text string) string {
	var b strings.Builder
	b.WriteString(`<AllKinds aint="0" au64="0" af="0" abytes="">`)
	for _, f := range []string{"S", "I", "I8", "I16", "I32", "I64", "U", "U8", "U16", "U32", "U64", "F32", "F64", "B", "T", "Raw"} {
		v := "0"
		switch f {
		case "S", "Raw":
			v = ""
		case "T":
			v = "2026-01-01T00:00:00Z"
		}
		if f == field {
			v = text
		}
		fmt.Fprintf(&b, "<%s>%s</%[1]s>", f, v)
	}
	b.WriteString(`<Wrapped/><Mode>on</Mode></AllKinds>`)
	return b.String()
}

func TestDecodeInvalidValues(t *testing.T) {
	c := mustCodec[AllKinds](t)
	tests := []struct {
		field, text, want string
	}{
		{"I", "1_000", "invalid xs:integer value \"1_000\": invalid lexical form"},
		{"I", "0x10", "invalid lexical form"},
		{"I", "", "invalid lexical form"},
		{"I", "1 2", "invalid lexical form"},
		{"I", "99999999999999999999", "value out of range for the Go type"},
		{"I", "9223372036854775808", "out of range"},
		{"I8", "128", "out of range"},
		{"I8", "-129", "out of range"},
		{"U", "-1", "out of range"},
		{"U8", "256", "out of range"},
		{"U16", "65536", "out of range"},
		{"U32", "4294967296", "out of range"},
		{"F64", "1e400", "out of range"},
		{"F32", "1e39", "out of range"},
		{"F64", "inf", "invalid lexical form"},
		{"F64", "nan", "invalid lexical form"},
		{"F64", "0x1p3", "invalid lexical form"},
		{"F64", "1e", "invalid lexical form"},
		{"F64", ".", "invalid lexical form"},
		{"B", "yes", "invalid xs:boolean value"},
		{"B", "True", "invalid lexical form"},
		{"T", "2026-01-18", "invalid xs:dateTime value"},
		{"T", "0000-01-01T00:00:00Z", "year outside 0001-9999"},
		{"T", "2026-01-18T12:00:00+15:00", "zone offset beyond"},
		{"Raw", "abc", "invalid xs:base64Binary value"},
		{"Raw", "YR==", "invalid xs:base64Binary value"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.text, func(t *testing.T) {
			_, err := c.Decode([]byte(allKindsWith(tt.field, tt.text)))
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("Decode = %v, want ErrDecode", err)
			}
			if want := "codec: decode AllKinds/" + tt.field + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start with %q", err, want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestDecodeErrors checks documents that are malformed or do not match the model.
func TestDecodeErrors(t *testing.T) {
	order := mustCodec[Order](t)
	greet := mustCodec[GreetingResponse](t)
	kinds := mustCodec[AllKinds](t)
	const ns = `xmlns="https://xml-pipeline.org/ns/shop/order/v1"`
	item := `<Item sku="s"><Count>1</Count><Unit>1</Unit></Item>`
	orderDoc := func(items, rest string) string {
		return `<Order ` + ns + ` id="1"><Items>` + items + `</Items>` + rest + `<Qty>1</Qty><Prio>low</Prio><When>2026-01-01T00:00:00Z</When><Blob></Blob></Order>`
	}
	tests := []struct {
		name string
		c    *Codec
		xml  string
		want string
	}{
		{"empty input", greet, ``, "codec: decode GreetingResponse: malformed XML at byte 0: no root element"},
		{"text only", greet, `hello`, "text before the root element"},
		{"doctype", greet, `<!DOCTYPE x [<!ENTITY a "b">]><GreetingResponse/>`, "DOCTYPE and other declarations are not allowed"},
		{"wrong root", greet, `<Greeting><Name>x</Name></Greeting>`, "root element is <Greeting>, want <GreetingResponse> in no namespace"},
		{"namespaced root", greet, `<GreetingResponse xmlns="urn:x"><Message/><OriginalSender/></GreetingResponse>`, "root element is <GreetingResponse> in another namespace"},
		{"missing namespace", order, orderDoc(item, "")[0:7] + `id="1"/>`, "want <Order> in https://xml-pipeline.org/ns/shop/order/v1"},
		{"missing element", greet, `<GreetingResponse><Message>x</Message></GreetingResponse>`, "codec: decode GreetingResponse: missing element <OriginalSender>"},
		{"repeated element", greet, `<GreetingResponse><Message/><Message/><OriginalSender/></GreetingResponse>`, "element <Message> repeated"},
		{"unknown element", greet, `<GreetingResponse><Message/><OriginalSender/><Extra/></GreetingResponse>`, "unexpected element <Extra>"},
		{"snake case", greet, `<GreetingResponse><message/><original_sender/></GreetingResponse>`, "unexpected element <message>"},
		{"text in struct", greet, `<GreetingResponse>oops<Message/><OriginalSender/></GreetingResponse>`, `unexpected text "oops"`},
		{"child in simple", greet, `<GreetingResponse><Message><b>x</b></Message><OriginalSender/></GreetingResponse>`, "GreetingResponse/Message: unexpected child element in a simple value"},
		{"attribute on simple", greet, `<GreetingResponse><Message a="1"/><OriginalSender/></GreetingResponse>`, "GreetingResponse/Message: unexpected attribute a"},
		{"unknown attribute", greet, `<GreetingResponse b="1"><Message/><OriginalSender/></GreetingResponse>`, "unexpected attribute b"},
		{"xml:lang attribute", greet, `<GreetingResponse xml:lang="en"><Message/><OriginalSender/></GreetingResponse>`, "unexpected attribute xml:lang"},
		{"missing attribute", order, `<Order ` + ns + `><Items/><Qty>1</Qty><Prio>low</Prio><When>2026-01-01T00:00:00Z</When><Blob/></Order>`, "Order: missing attribute id"},
		{"missing wrapper", order, `<Order ` + ns + ` id="1"><Qty>1</Qty><Prio>low</Prio><When>2026-01-01T00:00:00Z</When><Blob/></Order>`, "missing element <Items>"},
		{"bad enum", order, strings.Replace(orderDoc(item, ""), ">low<", ">medium<", 1), `Order/Prio: invalid enumeration ["low" "high"] value "medium"`},
		{"item path", order, orderDoc(item+`<Item sku="t"><Count>-1</Count><Unit>1</Unit></Item>`, ""), "codec: decode Order/Items/Item[2]/Count: invalid xs:unsignedShort value \"-1\""},
		{"wrong item", order, orderDoc(`<Thing/>`, ""), "Order/Items: unexpected element <Thing>, want <Item>"},
		{"attribute path", order, orderDoc(`<Item><Count>1</Count><Unit>1</Unit></Item>`, ""), "Order/Items/Item[1]: missing attribute sku"},
		{"item attribute value", kinds, strings.Replace(allKindsWith("S", ""), `aint="0"`, `aint="x"`, 1), "AllKinds/@aint: invalid xs:integer value \"x\""},
		{"mismatched end tag", greet, `<GreetingResponse><Message></Msg><OriginalSender/></GreetingResponse>`, "end tag does not match <Message>"},
		{"unclosed", greet, `<GreetingResponse><Message>x`, "unexpected end of input in element content"},
		{"unclosed root", greet, `<GreetingResponse><Message/><OriginalSender/>`, "unexpected end of input"},
		{"content after root", greet, `<GreetingResponse><Message/><OriginalSender/></GreetingResponse><x/>`, "content after the root element"},
		{"second root text", greet, `<GreetingResponse><Message/><OriginalSender/></GreetingResponse>x`, "content after the root element"},
		{"undefined entity", greet, `<GreetingResponse><Message>&nbsp;</Message><OriginalSender/></GreetingResponse>`, "undefined entity &nbsp;"},
		{"bare ampersand", greet, `<GreetingResponse><Message>a & b</Message><OriginalSender/></GreetingResponse>`, "unterminated reference"},
		{"bad char ref", greet, `<GreetingResponse><Message>&#0;</Message><OriginalSender/></GreetingResponse>`, "is not an XML character"},
		{"huge char ref", greet, `<GreetingResponse><Message>&#x110000;</Message><OriginalSender/></GreetingResponse>`, "out of range"},
		{"control char", greet, "<GreetingResponse><Message>a\x01</Message><OriginalSender/></GreetingResponse>", "invalid character U+0001"},
		{"invalid utf8", greet, "<GreetingResponse><Message>a\xff</Message><OriginalSender/></GreetingResponse>", "invalid UTF-8"},
		{"cdata end in text", greet, `<GreetingResponse><Message>]]></Message><OriginalSender/></GreetingResponse>`, `"]]>" in character data`},
		{"lt in attribute", order, strings.Replace(orderDoc(item, ""), `id="1"`, `id="<"`, 1), `"<" in an attribute value`},
		{"duplicate attribute", order, strings.Replace(orderDoc(item, ""), `id="1"`, `id="1" id="2"`, 1), `attribute "id" repeated`},
		{"attributes run together", order, strings.Replace(orderDoc(item, ""), `id="1"`, `id="1"x="2"`, 1), "whitespace expected before an attribute"},
		{"unquoted attribute", order, strings.Replace(orderDoc(item, ""), `id="1"`, `id=1`, 1), "quoted value expected"},
		{"unbound prefix", greet, `<p:GreetingResponse><Message/><OriginalSender/></p:GreetingResponse>`, `namespace prefix "p" is not declared`},
		{"undeclare prefix", greet, `<GreetingResponse xmlns:p=""><Message/><OriginalSender/></GreetingResponse>`, "undeclared"},
		{"child in other namespace", order, strings.Replace(orderDoc(item, ""), "<Prio>", `<Prio xmlns="urn:other">`, 1), "unexpected element <Prio> in another namespace"},
		{"misplaced xml decl", greet, ` <?xml version="1.0"?><GreetingResponse/>`, "misplaced XML declaration"},
		{"bad comment", greet, `<GreetingResponse><!-- a -- b --><Message/><OriginalSender/></GreetingResponse>`, `"--" inside a comment`},
		{"unterminated cdata", greet, `<GreetingResponse><Message><![CDATA[x</Message></GreetingResponse>`, "unterminated CDATA section"},
		{"bad name", greet, `<1GreetingResponse/>`, "invalid name start character"},
		{"bad qname", greet, `<a:b:c/>`, "invalid qualified name"},
		{"slash without gt", greet, `<GreetingResponse/ >`, `"/" not followed by ">"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.c.Decode([]byte(tt.xml))
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", v)
			}
			if v != nil {
				t.Errorf("Decode returned a value with the error")
			}
			if !errors.Is(err, ErrDecode) {
				t.Errorf("error %v does not wrap ErrDecode", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestDecodeNamespaces checks the namespace forms a namespaced payload may take.
func TestDecodeNamespaces(t *testing.T) {
	c := mustCodec[Order](t)
	tests := []struct{ name, xml string }{
		{"default namespace", `<Order xmlns="https://xml-pipeline.org/ns/shop/order/v1" id="1"><Items/><Qty>1</Qty><Prio>low</Prio><When>2026-01-01T00:00:00Z</When><Blob/></Order>`},
		{"prefixed", `<o:Order xmlns:o="https://xml-pipeline.org/ns/shop/order/v1" id="1"><o:Items></o:Items><o:Qty>1</o:Qty><o:Prio>low</o:Prio><o:When>2026-01-01T00:00:00Z</o:When><o:Blob/></o:Order>`},
		{"redeclared on a child", `<o:Order xmlns:o="https://xml-pipeline.org/ns/shop/order/v1" id="1"><Items xmlns="https://xml-pipeline.org/ns/shop/order/v1"/><o:Qty>1</o:Qty><o:Prio>low</o:Prio><o:When>2026-01-01T00:00:00Z</o:When><o:Blob/></o:Order>`},
		{"unused declarations", `<Order xmlns="https://xml-pipeline.org/ns/shop/order/v1" xmlns:x="urn:x" id="1"><Items/><Qty>1</Qty><Prio>low</Prio><When>2026-01-01T00:00:00Z</When><Blob/></Order>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Decode([]byte(tt.xml))
			if err != nil {
				t.Fatal(err)
			}
			if o := got.(*Order); o.ID != "1" || o.Prio != "low" {
				t.Errorf("decoded %+v", o)
			}
		})
	}
	// A declaration made on a child goes out of scope at its end tag.
	scoped := `<o:Order xmlns:o="https://xml-pipeline.org/ns/shop/order/v1" id="1"><Items xmlns="https://xml-pipeline.org/ns/shop/order/v1"/><Prio>low</Prio><o:When>2026-01-01T00:00:00Z</o:When><o:Blob/></o:Order>`
	if _, err := c.Decode([]byte(scoped)); err == nil || !strings.Contains(err.Error(), "unexpected element <Prio> in another namespace") {
		t.Errorf("out-of-scope default namespace: err = %v", err)
	}
}

// TestDecodeWideStruct checks presence tracking past 64 fields.
func TestDecodeWideStruct(t *testing.T) {
	fields := []reflect.StructField{{Name: "XMLName", Type: reflect.TypeFor[xml.Name](), Tag: `xml:"Wide"`}}
	for i := range 70 {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[int]()})
	}
	c, err := For(reflect.StructOf(fields))
	if err != nil {
		t.Fatal(err)
	}
	var full, missing strings.Builder
	full.WriteString("<Wide>")
	missing.WriteString("<Wide>")
	for i := range 70 {
		fmt.Fprintf(&full, "<F%d>%d</F%[1]d>", i, i)
		if i != 68 {
			fmt.Fprintf(&missing, "<F%d>%d</F%[1]d>", i, i)
		}
	}
	full.WriteString("</Wide>")
	missing.WriteString("</Wide>")
	v, err := c.Decode([]byte(full.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := reflect.ValueOf(v).Elem().FieldByName("F69").Int(); got != 69 {
		t.Errorf("F69 = %d", got)
	}
	if _, err := c.Decode([]byte(missing.String())); err == nil || !strings.Contains(err.Error(), "missing element <F68>") {
		t.Errorf("missing F68: err = %v", err)
	}
	dup := strings.Replace(full.String(), "<F69>", "<F66>1</F66><F69>", 1)
	if _, err := c.Decode([]byte(dup)); err == nil || !strings.Contains(err.Error(), "element <F66> repeated") {
		t.Errorf("repeated F66: err = %v", err)
	}
}
