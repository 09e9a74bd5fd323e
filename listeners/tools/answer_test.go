package tools

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

type result struct {
	Value string
	Error string `xml:",omitempty"`
}

type textInput struct{ Text string }

type numbers struct{ A, B int }

func TestAnswer(t *testing.T) {
	text, err := xmlpipe.PayloadTypeOf[textInput]()
	if err != nil {
		t.Fatal(err)
	}
	nums, err := xmlpipe.PayloadTypeOf[numbers]()
	if err != nil {
		t.Fatal(err)
	}
	own, err := xmlpipe.PayloadTypeOf[result]()
	if err != nil {
		t.Fatal(err)
	}
	callers := CallersFunc(func(name string) (*xmlpipe.PayloadType, bool) {
		switch name {
		case "agent":
			return text, true
		case "calc":
			return nums, true
		case "self":
			return own, true
		}
		return nil, false
	})
	res := &result{Value: "42"}
	tests := []struct {
		name string
		c    Callers
		from string
		want any
	}{
		{"no callers", nil, "agent", res},
		{"external caller", callers, "console", res},
		{"caller takes the result", callers, "self", res},
		{"caller without a text field", callers, "calc", res},
		{"agent", callers, "agent", &textInput{Text: `{"Value":"42"}`}},
	}
	for _, tc := range tests {
		r, ok := Answer(tc.c, xmlpipe.Metadata{From: tc.from}, res).(*xmlpipe.RespondResponse)
		if !ok {
			t.Fatalf("%s: not a Respond", tc.name)
		}
		switch want := tc.want.(type) {
		case *result:
			if r.Payload != want {
				t.Errorf("%s: payload %#v", tc.name, r.Payload)
			}
		case *textInput:
			got, ok := r.Payload.(*textInput)
			if !ok || *got != *want {
				t.Errorf("%s: payload %#v, want %#v", tc.name, r.Payload, want)
			}
		}
	}
}
