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
// one is the empty text (an N given beside it is more than the text), and
// a line of text goes into it.
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
		{`<Echoed><Text>hello</Text></Echoed>`, got{"hello", true}},
		{`<Echoed><Text></Text></Echoed>`, got{"", true}},
		{`<Echoed></Echoed>`, got{"", true}},
		// An N given (even 0) is more than the text: no text of its own.
		{`<Echoed><Text>hello</Text><N>0</N></Echoed>`, got{"", false}},
		{`<Echoed><N>3</N></Echoed>`, got{"", false}},
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

// weather is a structured answer with one string field among others.
type weather struct {
	City  string
	TempC int
}

// note is a text payload with optional fields beside its text.
type note struct {
	Text    string
	Author  string `xml:",omitempty"`
	Urgent  bool   `xml:",omitempty"`
	Tags    []string
	Retries *int
}

// TestPayloadTextOnlyWhenTheTextIsAll: a payload value reads as its text
// only when its text field carries all it holds — every other field left
// out or empty; a required number or bool always holds its value, an
// optional one given (even 0) holds it too. Otherwise it has no text and
// is shown whole (as its XML or JSON) by the caller.
func TestPayloadTextOnlyWhenTheTextIsAll(t *testing.T) {
	zero, three := 0, 3
	type got struct {
		Text string
		OK   bool
	}
	for _, tc := range []struct {
		name string
		in   any
		want got
	}{
		{"one string among others", &weather{City: "Oslo", TempC: -3}, got{"", false}},
		{"required number at zero", &weather{City: "Oslo"}, got{"", false}},
		{"text alone", &note{Text: "hi"}, got{"hi", true}},
		{"empty text alone", &note{}, got{"", true}},
		{"optional string set", &note{Text: "hi", Author: "ann"}, got{"", false}},
		{"omitempty bool false", &note{Text: "hi", Urgent: false}, got{"hi", true}},
		{"omitempty bool true", &note{Text: "hi", Urgent: true}, got{"", false}},
		{"empty slice", &note{Text: "hi", Tags: []string{}}, got{"hi", true}},
		{"slice set", &note{Text: "hi", Tags: []string{"x"}}, got{"", false}},
		{"optional number left out", &note{Text: "hi", Retries: nil}, got{"hi", true}},
		{"optional number given as 0", &note{Text: "hi", Retries: &zero}, got{"", false}},
		{"optional number given", &note{Text: "hi", Retries: &three}, got{"", false}},
		{"not a struct", "hi", got{"", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := stage.PayloadText(tc.in)
			if d := cmp.Diff(tc.want, got{s, ok}); d != "" {
				t.Errorf("PayloadText(%#v) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

// TestTakesText: a payload type takes a line of text when its text field is
// all it needs — every other field may be left empty — not when a text
// payload would make another field up (a Weather's TempC).
func TestTakesText(t *testing.T) {
	type shout struct {
		Message string
		Sender  string
	}
	type flagged struct {
		Text string
		Done bool
	}
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want bool
	}{
		{"text alone", reflect.TypeFor[struct{ Text string }](), true},
		{"pointer to it", reflect.TypeFor[*struct{ Text string }](), true},
		{"optional fields beside the text", reflect.TypeFor[note](), true},
		{"another string beside the text", reflect.TypeFor[shout](), true},
		{"a required number beside the only string", reflect.TypeFor[weather](), false},
		{"a required bool beside the text", reflect.TypeFor[flagged](), false},
		{"no text field", reflect.TypeFor[struct{ N int }](), false},
	} {
		if got := stage.TakesText(tc.typ); got != tc.want {
			t.Errorf("%s: TakesText(%v) = %v, want %v", tc.name, tc.typ, got, tc.want)
		}
	}
}
