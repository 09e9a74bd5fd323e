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
