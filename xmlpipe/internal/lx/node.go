package lx

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import "unsafe"

// NodeType is libxml2's node type.
type NodeType int

// Node types used by callers.
const (
	ElementNode   NodeType = C.XML_ELEMENT_NODE
	TextNode      NodeType = C.XML_TEXT_NODE
	CDATANode     NodeType = C.XML_CDATA_SECTION_NODE
	EntityRefNode NodeType = C.XML_ENTITY_REF_NODE
	PINode        NodeType = C.XML_PI_NODE
	CommentNode   NodeType = C.XML_COMMENT_NODE
)

// Node is a node of a live Doc. The zero Node is "no node"; every method is
// safe on it (navigation returns the zero Node, accessors zero values).
type Node struct {
	p *C.xmlNode
}

// IsZero reports whether n is no node.
func (n Node) IsZero() bool { return n.p == nil }

// Type returns the node type.
func (n Node) Type() NodeType {
	if n.p == nil {
		return 0
	}
	return NodeType(n.p._type)
}

// Name returns the local name (element/PI name).
func (n Node) Name() string {
	if n.p == nil || n.p.name == nil {
		return ""
	}
	return C.GoString((*C.char)(unsafe.Pointer(n.p.name)))
}

// Namespace returns the namespace URI of an element ("" for none).
func (n Node) Namespace() string {
	if n.p == nil || n.p.ns == nil || n.p.ns.href == nil {
		return ""
	}
	return C.GoString((*C.char)(unsafe.Pointer(n.p.ns.href)))
}

// FirstChild returns the first child node.
func (n Node) FirstChild() Node {
	if n.p == nil {
		return Node{}
	}
	return Node{p: n.p.children}
}

// Next returns the next sibling.
func (n Node) Next() Node {
	if n.p == nil {
		return Node{}
	}
	return Node{p: n.p.next}
}

// Parent returns the parent node (the document node for the root element).
func (n Node) Parent() Node {
	if n.p == nil {
		return Node{}
	}
	return Node{p: n.p.parent}
}

// FirstElement returns the first child element.
func (n Node) FirstElement() Node {
	for c := n.FirstChild(); !c.IsZero(); c = c.Next() {
		if c.Type() == ElementNode {
			return c
		}
	}
	return Node{}
}

// NextElement returns the next sibling element.
func (n Node) NextElement() Node {
	for c := n.Next(); !c.IsZero(); c = c.Next() {
		if c.Type() == ElementNode {
			return c
		}
	}
	return Node{}
}

// Text returns the concatenated text content.
func (n Node) Text() string {
	if n.p == nil {
		return ""
	}
	c := C.lx_node_text(n.p)
	if c == nil {
		return ""
	}
	s := C.GoString(c)
	C.free(unsafe.Pointer(c))
	return s
}

// Path returns the node's XPath (as libxml2 renders it).
func (n Node) Path() string {
	if n.p == nil {
		return ""
	}
	c := C.lx_node_path(n.p)
	if c == nil {
		return ""
	}
	s := C.GoString(c)
	C.free(unsafe.Pointer(c))
	return s
}

// Line returns the source line of the node.
func (n Node) Line() int {
	if n.p == nil {
		return 0
	}
	return int(C.lx_node_line(n.p))
}

// TextFast returns the concatenated content of n's direct text and CDATA
// children without a cgo call (enough for simple-content elements like <from>).
func (n Node) TextFast() string {
	if n.p == nil {
		return ""
	}
	c := n.p.children
	if c != nil && c.next == nil && (NodeType(c._type) == TextNode || NodeType(c._type) == CDATANode) {
		if c.content == nil {
			return ""
		}
		return C.GoString((*C.char)(unsafe.Pointer(c.content)))
	}
	var b []byte
	for ; c != nil; c = c.next {
		switch NodeType(c._type) {
		case TextNode, CDATANode:
			if c.content != nil {
				b = append(b, C.GoString((*C.char)(unsafe.Pointer(c.content)))...)
			}
		case ElementNode, EntityRefNode:
			return n.Text()
		}
	}
	return string(b)
}

// NameView returns the local name as a string aliasing the document's memory:
// no copy, valid only until the document is freed (intern or clone it to keep it).
func (n Node) NameView() string {
	if n.p == nil {
		return ""
	}
	return cview(n.p.name)
}

// NamespaceView returns the namespace URI like NameView: aliasing, no copy.
func (n Node) NamespaceView() string {
	if n.p == nil || n.p.ns == nil {
		return ""
	}
	return cview(n.p.ns.href)
}

// TextView returns the text of an element whose only child is one text or
// CDATA node (or that has no children) as a string aliasing the document's
// memory, like NameView; ok is false for any other shape (use TextFast).
func (n Node) TextView() (s string, ok bool) {
	if n.p == nil {
		return "", true
	}
	c := n.p.children
	if c == nil {
		return "", true
	}
	if c.next == nil && (NodeType(c._type) == TextNode || NodeType(c._type) == CDATANode) {
		return cview(c.content), true
	}
	return "", false
}

// SetText replaces n's children with a single text node holding s (s is raw
// text, not markup).
func (n Node) SetText(s string) {
	if n.p == nil {
		return
	}
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	C.lx_set_text(n.p, cs)
}

// LocalName returns the element's local name (alias of Name, for readability
// where namespaces matter).
func (n Node) LocalName() string { return n.Name() }

// cview returns a string that aliases the NUL-terminated C string p without
// copying: valid only while the document lives, for comparisons.
func cview(p *C.xmlChar) string {
	if p == nil {
		return ""
	}
	b := (*byte)(unsafe.Pointer(p))
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(b), n)) != 0 {
		n++
	}
	return unsafe.String(b, n)
}

// NameIs reports whether the node's local name is name, without allocating.
func (n Node) NameIs(name string) bool {
	return n.p != nil && cview(n.p.name) == name
}

// NamespaceIs reports whether the element's namespace URI is ns ("" for
// none), without allocating.
func (n Node) NamespaceIs(ns string) bool {
	if n.p == nil {
		return false
	}
	if n.p.ns == nil {
		return ns == ""
	}
	return cview(n.p.ns.href) == ns
}
