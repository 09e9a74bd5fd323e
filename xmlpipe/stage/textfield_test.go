package stage_test

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/fields"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestPayloadTextOfOptionalField: a payload built from a field list whose
// text field is optional (a federation answer typed from its shape) has a
// *string text field; its text is read through the pointer, a left-out
// one is the empty text, and a line of text goes into it.
func TestPayloadTextOfOptionalField(t *testing.T) {
	l := fields.List{Root: "Echoed", Fields: []fields.Field{
		{Name: "Text", Optional: true},
		{Name: "N", Type: "integer", Optional: true},
	}}
	pt, err := l.PayloadType(nil)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Text string
		OK   bool
	}
	for _, tc := range []struct {
		in   string
		want got
	}{
		{`<Echoed><Text>hello</Text><N>0</N></Echoed>`, got{"hello", true}},
		{`<Echoed><Text></Text></Echoed>`, got{"", true}},
		{`<Echoed><N>3</N></Echoed>`, got{"", true}},
	} {
		v, err := pt.Decode([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		s, ok := stage.PayloadText(v)
		if d := cmp.Diff(tc.want, got{s, ok}); d != "" {
			t.Errorf("PayloadText of %s (-want +got):\n%s", tc.in, d)
		}
	}

	v, ok := stage.NewTextPayload(pt.GoType(), "a line")
	if !ok {
		t.Fatalf("NewTextPayload(%v): no text field", pt.GoType())
	}
	b, err := pt.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(`<Echoed xmlns=""><Text>a line</Text></Echoed>`, string(b)); d != "" {
		t.Errorf("NewTextPayload (-want +got):\n%s", d)
	}
}

// TestDeref: pointers and interfaces are followed to their value; a nil
// one is absent.
func TestDeref(t *testing.T) {
	s := "x"
	ps := &s
	var nilp *string
	var iface any = &ps
	for _, tc := range []struct {
		name string
		in   reflect.Value
		want any // nil: absent
	}{
		{"value", reflect.ValueOf("x"), "x"},
		{"pointer", reflect.ValueOf(ps), "x"},
		{"pointer to pointer in interface", reflect.ValueOf(&iface).Elem(), "x"},
		{"nil pointer", reflect.ValueOf(nilp), nil},
		{"invalid", reflect.Value{}, nil},
	} {
		v, ok := stage.Deref(tc.in)
		var got any
		if ok {
			got = v.Interface()
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}
