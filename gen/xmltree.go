package gen

import (
	"bytes"

	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// node is an element of a small XML tree that gen pretty-prints (XSD, example).
// An element has text or children, never both.
type node struct {
	name     string
	attrs    []attr
	text     string
	hasText  bool
	children []*node
}

// attr is one attribute of a node, kept in insertion order.
type attr struct{ name, value string }

// elem returns a new node with the given attributes (name/value pairs).
func elem(name string, pairs ...string) *node {
	n := &node{name: name}
	for i := 0; i+1 < len(pairs); i += 2 {
		n.attrs = append(n.attrs, attr{pairs[i], pairs[i+1]})
	}
	return n
}

// add appends children to n and returns n.
func (n *node) add(children ...*node) *node {
	n.children = append(n.children, children...)
	return n
}

// set adds an attribute to n and returns n.
func (n *node) set(name, value string) *node {
	n.attrs = append(n.attrs, attr{name, value})
	return n
}

// withText gives n text content and returns n.
func (n *node) withText(s string) *node {
	n.text, n.hasText = s, true
	return n
}

// pretty renders n with a 2-space indent, one element per line, a final newline
// and no XML declaration: the layout of lxml's pretty_print.
func (n *node) pretty() []byte {
	var buf bytes.Buffer
	n.write(&buf, 0)
	return buf.Bytes()
}

func (n *node) write(buf *bytes.Buffer, depth int) {
	for range depth {
		buf.WriteString("  ")
	}
	buf.WriteByte('<')
	buf.WriteString(n.name)
	for _, a := range n.attrs {
		buf.WriteByte(' ')
		buf.WriteString(a.name)
		buf.WriteString(`="`)
		buf.Write(xmltext.AppendAttr(buf.AvailableBuffer(), a.value))
		buf.WriteByte('"')
	}
	switch {
	case n.hasText:
		buf.WriteByte('>')
		buf.Write(xmltext.AppendText(buf.AvailableBuffer(), n.text))
		buf.WriteString("</")
		buf.WriteString(n.name)
		buf.WriteString(">\n")
	case len(n.children) == 0:
		buf.WriteString("/>\n")
	default:
		buf.WriteString(">\n")
		for _, c := range n.children {
			c.write(buf, depth+1)
		}
		for range depth {
			buf.WriteString("  ")
		}
		buf.WriteString("</")
		buf.WriteString(n.name)
		buf.WriteString(">\n")
	}
}
