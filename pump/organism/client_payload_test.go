package organism

import (
	"encoding/xml"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
)

type twoStrings struct{ A, B string }

type textAndOther struct{ Other, Text string }

type nameAndTitle struct{ Title, Name string }

type messageFirst struct{ Name, Text, Message string }

type withXMLName struct {
	XMLName xml.Name `xml:"note"`
	Body    string
}

type mixed struct {
	N    int
	Note string
	//lint:ignore U1000 the unexported field is the case under test: it is not a payload field
	note string
}

type skipped struct {
	Hidden string `xml:"-"`
	Shown  string
	Other  string
}

type noStrings struct{ N int }

func TestNewPayload(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		want any
	}{
		{"single field", reflect.TypeFor[hello.Greeting](), &hello.Greeting{Name: "Dan"}},
		{"pointer type", reflect.TypeFor[*hello.Greeting](), &hello.Greeting{Name: "Dan"}},
		{"message before others", reflect.TypeFor[hello.GreetingResponse](), &hello.GreetingResponse{Message: "Dan"}},
		{"message first of three", reflect.TypeFor[messageFirst](), &messageFirst{Message: "Dan"}},
		{"text", reflect.TypeFor[textAndOther](), &textAndOther{Text: "Dan"}},
		{"name", reflect.TypeFor[nameAndTitle](), &nameAndTitle{Name: "Dan"}},
		{"XMLName is not a field", reflect.TypeFor[withXMLName](), &withXMLName{Body: "Dan"}},
		{"single string among others", reflect.TypeFor[mixed](), &mixed{Note: "Dan"}},
		{"no text field", reflect.TypeFor[twoStrings](), nil},
		{"xml:\"-\" ignored", reflect.TypeFor[skipped](), nil},
		{"no string field", reflect.TypeFor[noStrings](), nil},
		{"not a struct", reflect.TypeFor[string](), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewPayload(tt.typ, "Dan")
			if tt.want == nil {
				if !errors.Is(err, ErrNoTextField) {
					t.Fatalf("NewPayload = %v, %v; want ErrNoTextField", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewPayload: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(mixed{})); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPayloadText(t *testing.T) {
	tests := []struct {
		name   string
		v      any
		want   string
		wantOK bool
	}{
		{"pointer", &hello.ShoutedResponse{Message: "HELLO"}, "HELLO", true},
		{"value", hello.ShoutedResponse{Message: "HELLO"}, "HELLO", true},
		{"message field", &hello.GreetingResponse{Message: "hi"}, "hi", true},
		// The Message is not all a GreetingResponse with a sender holds.
		{"message field beside another", &hello.GreetingResponse{Message: "hi", OriginalSender: "x"}, "", false},
		{"nil pointer", (*hello.ShoutedResponse)(nil), "", false},
		{"nil", nil, "", false},
		{"no text field", &twoStrings{A: "a"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PayloadText(tt.v)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("PayloadText = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
