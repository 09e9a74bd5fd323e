package lx

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestXPathDocumentNode: "/" selects the document node, whose xmlDoc has
// no ns field where an element has one; reading it there faulted.
func TestXPathDocumentNode(t *testing.T) {
	d := mustParse(t, `<r xmlns="urn:x">text</r>`, OptNoNet)
	defer d.Free()
	v, err := d.XPath(context.Background(), "/", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []XPathNode{{Type: DocumentNode, Value: "text"}}
	if diff := cmp.Diff(want, v.Nodes, cmpopts.IgnoreFields(XPathNode{}, "Node")); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
}
