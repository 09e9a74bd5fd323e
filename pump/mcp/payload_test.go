package mcp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRenderKeepsEveryLeaf: an answer whose leaves repeat (a list of
// items) reaches the client whole — its text is the XML, not one of the
// items, and its structured content lists every item in order — while an
// answer with one non-empty leaf is still that leaf's text.
func TestRenderKeepsEveryLeaf(t *testing.T) {
	for _, tc := range []struct {
		name, payload, text string
		fields              map[string]any
	}{
		{name: "one leaf", payload: `<R><Value>42</Value><Note></Note></R>`, text: "42",
			fields: map[string]any{"Value": "42", "Note": ""}},
		{name: "two leaves", payload: `<R><A>1</A><B>2</B></R>`, text: `<R><A>1</A><B>2</B></R>`,
			fields: map[string]any{"A": "1", "B": "2"}},
		{name: "repeated leaf", payload: `<R><Item>a</Item><Item>b</Item></R>`, text: `<R><Item>a</Item><Item>b</Item></R>`,
			fields: map[string]any{"Item": []string{"a", "b"}}},
		{name: "repeated leaf, one non-empty", payload: `<R><Item></Item><Item>b</Item></R>`, text: "b",
			fields: map[string]any{"Item": []string{"", "b"}}},
		{name: "nested repeats", payload: `<R><P><N>x</N></P><P><N>y</N></P><P><N>z</N></P></R>`,
			text:   `<R><P><N>x</N></P><P><N>y</N></P><P><N>z</N></P></R>`,
			fields: map[string]any{"P.N": []string{"x", "y", "z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Render([]byte(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.text, a.Text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.fields, a.Fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPayloadOf: the payload of a canonical envelope is found whatever the
// root's prefix — <ns0:message>, as Python's ElementTree writes it, was "not
// a canonical envelope" and its answer a tool error — and a foreign element
// called meta inside <meta> does not end it.
func TestPayloadOf(t *testing.T) {
	const th = `<thread>550e8400-e29b-41d4-a716-446655440000</thread>`
	for _, tc := range []struct{ name, env, want string }{
		{"default namespace", `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from>` + th +
			`</meta><R xmlns=""><Value>42</Value></R></message>`, `<R xmlns=""><Value>42</Value></R>`},
		{"ns0 prefix", `<ns0:message xmlns:ns0="https://xml-pipeline.org/ns/envelope/v1"><ns0:meta><ns0:from>a</ns0:from>` +
			`<ns0:thread>550e8400-e29b-41d4-a716-446655440000</ns0:thread></ns0:meta><R><Value>42</Value></R></ns0:message>`,
			`<R><Value>42</Value></R>`},
		{"foreign meta in meta", `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from>` + th +
			`<x:meta xmlns:x="urn:x">1</x:meta></meta><R xmlns=""></R></message>`, `<R xmlns=""></R>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PayloadOf([]byte(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`not an envelope`, `<message><meta></meta></message>`, ``} {
		if got, err := PayloadOf([]byte(bad)); err == nil {
			t.Errorf("PayloadOf(%q) = %q, want an error", bad, got)
		}
	}
}
