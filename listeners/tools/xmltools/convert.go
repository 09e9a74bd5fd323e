package xmltools

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// Conversion errors.
var (
	ErrInvalidXML  = errors.New("invalid XML")
	ErrInvalidJSON = errors.New("invalid JSON")
	ErrName        = errors.New("not a valid XML name")
)

const maxDepth = 256

// element is a parsed XML element.
type element struct {
	name     string
	attrs    []xml.Attr
	children []*element
	text     strings.Builder
}

func parseXML(s string) (*element, error) {
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var root *element
	var stack []*element
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidXML, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxDepth {
				return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalidXML, maxDepth)
			}
			e := &element{name: t.Name.Local, attrs: t.Attr}
			if len(stack) == 0 {
				if root != nil {
					return nil, fmt.Errorf("%w: more than one root element", ErrInvalidXML)
				}
				root = e
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			} else if len(bytes.TrimSpace(t)) > 0 {
				return nil, fmt.Errorf("%w: text outside the root element", ErrInvalidXML)
			}
		case xml.Directive:
			return nil, fmt.Errorf("%w: document type declarations are rejected", ErrInvalidXML)
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%w: no root element", ErrInvalidXML)
	}
	return root, nil
}

// typed is the reference's leaf typing: true/false → bool, "" → null, a
// number → a number, else the text.
func typed(s string) any {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "true":
		return true
	case "false":
		return false
	case "":
		return nil
	}
	if strings.Contains(t, ".") {
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return f
		}
		return s
	}
	if i, err := strconv.ParseInt(t, 10, 64); err == nil {
		return i
	}
	return s
}

// toValue converts an element: a leaf to its typed text (an object with
// "@attr" and "#text" when it has attributes — the reference drops them);
// otherwise an object of "@attr" and children, repeated tags as arrays.
func toValue(e *element) any {
	if len(e.children) == 0 && len(e.attrs) == 0 {
		return typed(e.text.String())
	}
	m := map[string]any{}
	for _, a := range e.attrs {
		m["@"+a.Name.Local] = a.Value
	}
	if len(e.children) == 0 {
		m["#text"] = typed(e.text.String())
		return m
	}
	if t := strings.TrimSpace(e.text.String()); t != "" {
		m["#text"] = t
	}
	counts := map[string]int{}
	for _, c := range e.children {
		counts[c.name]++
	}
	for _, c := range e.children {
		v := toValue(c)
		if counts[c.name] == 1 {
			m[c.name] = v
			continue
		}
		list, _ := m[c.name].([]any)
		m[c.name] = append(list, v)
	}
	return m
}

// XMLToJSONText converts an XML document to indented JSON.
func XMLToJSONText(doc string, keepRoot bool) (string, error) {
	root, err := parseXML(doc)
	if err != nil {
		return "", err
	}
	v := toValue(root)
	if keepRoot {
		v = map[string]any{root.name: v}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ordered is a JSON object with its member order.
type ordered struct {
	keys []string
	vals map[string]any
}

func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalidJSON, maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &ordered{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
				}
				k := kt.(string)
				v, err := decodeOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			var arr []any
			for dec.More() {
				v, err := decodeOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			if arr == nil {
				arr = []any{}
			}
			return arr, err
		}
	}
	return tok, nil
}

// JSONToXMLText converts a JSON value to an XML document under root.
func JSONToXMLText(src, root string, pretty bool) (string, error) {
	if root == "" {
		root = "data"
	}
	if !gen.IsNCName(root) {
		return "", fmt.Errorf("%w: root tag %q", ErrName, root)
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	v, err := decodeOrdered(dec, 0)
	if err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("%w: trailing data after the value", ErrInvalidJSON)
	}
	w := &writer{pretty: pretty}
	if arr, ok := v.([]any); ok { // a top-level array: <item> children
		o := &ordered{keys: []string{"item"}, vals: map[string]any{"item": arr}}
		v = o
	}
	if err := w.element(root, v, 0); err != nil {
		return "", err
	}
	return w.b.String(), nil
}

type writer struct {
	b      strings.Builder
	pretty bool
}

func (w *writer) indent(depth int) {
	if w.pretty {
		if w.b.Len() > 0 {
			w.b.WriteByte('\n')
		}
		w.b.WriteString(strings.Repeat("  ", depth))
	}
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func (w *writer) element(name string, v any, depth int) error {
	if !gen.IsNCName(name) {
		return fmt.Errorf("%w: %q", ErrName, name)
	}
	w.indent(depth)
	w.b.WriteString("<" + name)
	o, isObj := v.(*ordered)
	if !isObj {
		s, ok := scalarText(v)
		if !ok {
			return fmt.Errorf("%w: unexpected value under %s", ErrInvalidJSON, name)
		}
		if v == nil {
			w.b.WriteString("/>")
			return nil
		}
		w.b.WriteByte('>')
		w.b.Write(xmltext.AppendText(nil, s))
		w.b.WriteString("</" + name + ">")
		return nil
	}
	var children []string
	for _, k := range o.keys {
		if strings.HasPrefix(k, "@") {
			s, ok := scalarText(o.vals[k])
			if !ok {
				return fmt.Errorf("%w: attribute %s must be a scalar", ErrInvalidJSON, k)
			}
			if !gen.IsNCName(k[1:]) {
				return fmt.Errorf("%w: attribute %q", ErrName, k[1:])
			}
			w.b.WriteString(" " + k[1:] + `="`)
			w.b.Write(xmltext.AppendAttr(nil, s))
			w.b.WriteByte('"')
			continue
		}
		children = append(children, k)
	}
	if len(children) == 0 {
		w.b.WriteString("/>")
		return nil
	}
	w.b.WriteByte('>')
	onlyText := true
	for _, k := range children {
		if k == "#text" {
			s, ok := scalarText(o.vals[k])
			if !ok {
				return fmt.Errorf("%w: #text must be a scalar", ErrInvalidJSON)
			}
			w.b.Write(xmltext.AppendText(nil, s))
			continue
		}
		onlyText = false
		items := []any{o.vals[k]}
		if arr, ok := o.vals[k].([]any); ok {
			items = arr
		}
		for _, it := range items {
			if _, nested := it.([]any); nested {
				return fmt.Errorf("%w: nested arrays under %s have no element name", ErrInvalidJSON, k)
			}
			if err := w.element(k, it, depth+1); err != nil {
				return err
			}
		}
	}
	if !onlyText {
		w.indent(depth)
	}
	w.b.WriteString("</" + name + ">")
	return nil
}
