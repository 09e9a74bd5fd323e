package gen

import (
	"encoding/xml"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fieldSummary is the part of a Field the table tests compare.
type fieldSummary struct {
	Name, Wrapper                     string
	Attr, Optional, Repeated, Pointer bool
	Kind                              Kind
	Doc                               string
	Enum                              []string
	StructName                        string
}

func summarize(fs []Field) []fieldSummary {
	var out []fieldSummary
	for _, f := range fs {
		s := fieldSummary{Name: f.Name, Wrapper: f.Wrapper, Attr: f.Attr, Optional: f.Optional,
			Repeated: f.Repeated, Pointer: f.Pointer, Kind: f.Kind, Doc: f.Doc, Enum: f.Enum}
		if f.Struct != nil {
			s.StructName = f.Struct.TypeName
		}
		out = append(out, s)
	}
	return out
}

type (
	Base struct {
		Trace string
	}
	embedding struct {
		Base
		Body string
	}
	Named string
	Kinds struct {
		I     int
		I8    int8
		I16   int16
		I32   int32
		I64   int64
		U     uint
		U8    uint8
		U16   uint16
		U32   uint32
		U64   uint64
		F32   float32
		F64   float64
		B     bool
		T     time.Time
		Raw   []byte
		N     Named
		Blobs [][]byte
	}
)

func TestDescribeOrder(t *testing.T) {
	ty, err := Describe(reflect.TypeFor[*Order]())
	if err != nil {
		t.Fatal(err)
	}
	if ty.Name != "Order" || ty.TypeName != "Order" || ty.Namespace != "https://xml-pipeline.org/ns/shop/order/v1" {
		t.Errorf("root = %q/%q/%q", ty.Name, ty.TypeName, ty.Namespace)
	}
	want := []fieldSummary{
		{Name: "id", Attr: true, Kind: String, Doc: "order id"},
		{Name: "Item", Wrapper: "Items", Repeated: true, Kind: Struct, StructName: "Item"},
		{Name: "Tags", Repeated: true, Kind: String},
		{Name: "Qty", Kind: Int32, Doc: "how many"},
		{Name: "Note", Optional: true, Pointer: true, Kind: String},
		{Name: "Prio", Kind: String, Enum: []string{"low", "high"}},
		{Name: "When", Kind: Time},
		{Name: "Blob", Kind: Bytes},
		{Name: "Price", Optional: true, Kind: Float64},
		{Name: "Shipping", Kind: Struct, StructName: "Address", Doc: "where it goes"},
	}
	if diff := cmp.Diff(want, summarize(ty.Fields)); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	geo := ty.Fields[9].Struct.Fields[1]
	if geo.Struct == nil || geo.Struct.TypeName != "" || len(geo.Struct.Fields) != 2 {
		t.Errorf("anonymous Geo struct = %+v", geo.Struct)
	}
}

func TestDescribeKinds(t *testing.T) {
	ty, err := Describe(reflect.TypeFor[Kinds]())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range ty.Fields {
		got = append(got, f.Name+"="+f.Kind.XSDType())
	}
	want := []string{"I=xs:integer", "I8=xs:byte", "I16=xs:short", "I32=xs:int", "I64=xs:long",
		"U=xs:nonNegativeInteger", "U8=xs:unsignedByte", "U16=xs:unsignedShort", "U32=xs:unsignedInt",
		"U64=xs:unsignedLong", "F32=xs:float", "F64=xs:double", "B=xs:boolean", "T=xs:dateTime",
		"Raw=xs:base64Binary", "N=xs:string", "Blobs=xs:base64Binary"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if !ty.Fields[16].Repeated {
		t.Errorf("[][]byte should be a repeated base64Binary element")
	}
}

func TestDescribeEmbeddedAndNames(t *testing.T) {
	ty, err := Describe(reflect.TypeFor[embedding]())
	if err != nil {
		t.Fatal(err)
	}
	if ty.Name != "embedding" {
		t.Errorf("Name = %q", ty.Name)
	}
	if diff := cmp.Diff([]string{"Trace", "Body"}, []string{ty.Fields[0].Name, ty.Fields[1].Name}); diff != "" {
		t.Errorf("promoted fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 0}, ty.Fields[0].Index); diff != "" {
		t.Errorf("promoted index (-want +got):\n%s", diff)
	}

	anon, err := Describe(reflect.TypeOf(struct {
		XMLName xml.Name `xml:"Ping"`
		Seq     int      `xml:"seq,attr,omitempty"`
	}{}))
	if err != nil {
		t.Fatal(err)
	}
	if anon.Name != "Ping" || anon.TypeName != "Ping" || !anon.Fields[0].Optional {
		t.Errorf("anonymous root = %+v", anon)
	}
}

func TestDescribeCached(t *testing.T) {
	var wg sync.WaitGroup
	got := make([]*Type, 8)
	for i := range got {
		wg.Go(func() {
			ty, err := Describe(reflect.TypeFor[Order]())
			if err != nil {
				t.Error(err)
			}
			got[i] = ty
		})
	}
	wg.Wait()
	for _, ty := range got {
		if ty != got[0] {
			t.Fatalf("Describe returned different models for one type")
		}
	}
	if ptr, _ := Describe(reflect.TypeFor[*Order]()); ptr != got[0] {
		t.Errorf("*Order and Order should share one model")
	}
}

type (
	withMap struct {
		Meta map[string]int
	}
	recursive struct {
		Next *recursive
	}
	recursiveSlice struct {
		Children []recursiveSlice
	}
	clashA      struct{ X int }
	clashHolder struct {
		A clashA
		B struct{ Y clashAlias }
	}
	clashAlias = clashA
)

// otherItem has the same type name as the package-level Item but is a different type.
func otherItemType() reflect.Type {
	type Item struct{ Z string }
	return reflect.TypeFor[Item]()
}

func TestDescribeErrors(t *testing.T) {
	clash := reflect.StructOf([]reflect.StructField{
		{Name: "XMLName", Type: reflect.TypeFor[xml.Name](), Tag: `xml:"Clash"`},
		{Name: "A", Type: reflect.TypeFor[Item]()},
		{Name: "B", Type: otherItemType()},
	})
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"nil", nil, "gen: <nil>: a nil type is not a payload type"},
		{"not a struct", reflect.TypeFor[string](), "gen: string: string is not supported (a payload must be a struct or a pointer to one)"},
		{"map", reflect.TypeFor[withMap](), "gen: withMap.Meta: map[string]int is not supported (maps have no XSD mapping; use a slice of key/value structs)"},
		{"interface", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			V       any
		}{}), "gen: struct { XMLName xml.Name \"xml:\\\"X\\\"\"; V interface {} }.V: interface {} is not supported (interfaces have no fixed schema)"},
		{"chan", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			C       chan int
		}{}), "chan int is not supported (it has no XML form)"},
		{"func", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			F       func()
		}{}), "func() is not supported"},
		{"complex", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			C       complex128
		}{}), "complex128 is not supported"},
		{"uintptr", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			P       uintptr
		}{}), "uintptr is not supported"},
		{"array", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       [4]int
		}{}), "[4]int is not supported (arrays are not supported; use a slice)"},
		{"pointer to pointer", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			P       **int
		}{}), "**int is not supported"},
		{"slice of pointers", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			P       []*Item
		}{}), "[]*gen.Item is not supported"},
		{"nested slices", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			P       [][]string
		}{}), "[][]string is not supported"},
		{"recursive pointer", reflect.TypeFor[recursive](), "gen: recursive.Next: recursive type gen.recursive is not supported"},
		{"recursive slice", reflect.TypeFor[recursiveSlice](), "gen: recursiveSlice.Children: recursive type gen.recursiveSlice is not supported"},
		{"name clash", clash, "name clash: gen.Item and gen.Item both map to complex type \"Item\""},
		{"unnamed root", reflect.TypeOf(struct{ A int }{}), "an unnamed struct needs an XMLName field"},
		{"generic name", reflect.TypeFor[box[int]](), `root element name "box[int]" is not a valid XML name`},
		{"generic nested name", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			B       box[int]
		}{}), `type name "box[int]" of gen.box[int] is not a valid XML name`},
		{"bad field name", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       int      `xml:"1a"`
		}{}), `name "1a" is not a valid XML name`},
		{"field namespace", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       int      `xml:"urn:x A"`
		}{}), "per-field namespaces are not supported"},
		{"chardata", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       string   `xml:",chardata"`
		}{}), `xml tag option "chardata" is not supported`},
		{"deep wrapper", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       []int    `xml:"a>b>c"`
		}{}), "only one wrapper level"},
		{"wrapper on scalar", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       int      `xml:"a>b"`
		}{}), "needs a slice field"},
		{"slice attribute", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       []int    `xml:",attr"`
		}{}), "attribute of slice type []int"},
		{"struct attribute", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       Item     `xml:",attr"`
		}{}), "attribute of struct type gen.Item"},
		{"enum on int", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       int      `enum:"1|2"`
		}{}), "enum tag on int is not supported"},
		{"repeated enum value", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       string   `enum:"a|a"`
		}{}), `enum value "a" is repeated`},
		{"duplicate element", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			A       int
			B       int `xml:"A"`
		}{}), `fields A and B both map to "A"`},
		{"embedded pointer", reflect.TypeOf(struct {
			XMLName xml.Name `xml:"X"`
			*Base
		}{}), "embedded pointer *gen.Base is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Describe(tt.typ)
			if err == nil {
				t.Fatalf("Describe succeeded, want error containing %q", tt.want)
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("error %v does not wrap ErrUnsupported", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	_ = clashHolder{} // an alias is the same type: no clash
	if _, err := Describe(reflect.TypeFor[clashHolder]()); err != nil {
		t.Errorf("alias of one type must not clash: %v", err)
	}
}

type box[T any] struct{ V T }

func TestIsNCName(t *testing.T) {
	for s, want := range map[string]bool{
		"Greeting": true, "_x": true, "a-b.c": true, "é": true, "x·y": true,
		"": false, "1a": false, "-a": false, "a:b": false, "a b": false, "box[int]": false, "\xff": false,
	} {
		if got := IsNCName(s); got != want {
			t.Errorf("IsNCName(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestKind(t *testing.T) {
	if Struct.XSDType() != "" || Invalid.String() != "invalid" || Struct.String() != "struct" || Int8.String() != "xs:byte" {
		t.Errorf("Kind names wrong")
	}
	sizes := map[Kind]int{Int8: 8, Uint16: 16, Int32: 32, Float32: 32, Int64: 64, Float64: 64}
	for k, want := range sizes {
		if k.BitSize() != want {
			t.Errorf("%v.BitSize() = %d, want %d", k, k.BitSize(), want)
		}
	}
}
