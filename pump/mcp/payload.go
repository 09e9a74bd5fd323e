package mcp

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
)

// ErrArguments means a tool call's arguments do not fit the payload.
var ErrArguments = errors.New("mcp: bad arguments")

// PayloadXML builds the payload element of t from a tool call's JSON
// arguments. Unknown and missing arguments are errors; values are written as
// text and the pump's schema validation judges them.
func PayloadXML(t *gen.Type, args json.RawMessage) ([]byte, error) {
	var m map[string]any
	if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%w: want a JSON object: %v", ErrArguments, err)
		}
	}
	var b []byte
	b = append(b, '<')
	b = append(b, t.Name...)
	b = append(b, ` xmlns="`...) // a no-namespace payload undeclares the envelope's
	b = xmltext.AppendAttr(b, t.Namespace)
	b = append(b, '"')
	b, err := appendFields(b, t, m, t.Name)
	if err != nil {
		return nil, err
	}
	b = append(b, "</"...)
	b = append(b, t.Name...)
	return append(b, '>'), nil
}

// appendFields writes t's attributes (b is inside the start tag), closes the
// start tag and writes the child elements.
func appendFields(b []byte, t *gen.Type, m map[string]any, path string) ([]byte, error) {
	known := map[string]bool{}
	for _, f := range t.Fields {
		known[f.Name] = true
	}
	var unknown []string
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%w: %s: unknown argument(s) %s", ErrArguments, path, strings.Join(unknown, ", "))
	}
	for _, f := range t.Fields {
		if !f.Attr {
			continue
		}
		v, ok := m[f.Name]
		if !ok || v == nil {
			if !f.Optional {
				return nil, fmt.Errorf("%w: %s: missing argument %s", ErrArguments, path, f.Name)
			}
			continue
		}
		s, err := scalar(v, path+"."+f.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, ' ')
		b = append(b, f.Name...)
		b = append(b, `="`...)
		b = xmltext.AppendAttr(b, s)
		b = append(b, '"')
	}
	b = append(b, '>')
	for _, f := range t.Fields {
		if f.Attr {
			continue
		}
		v, ok := m[f.Name]
		if !ok || v == nil {
			if !f.Optional && !f.Repeated {
				return nil, fmt.Errorf("%w: %s: missing argument %s", ErrArguments, path, f.Name)
			}
			continue
		}
		items := []any{v}
		if f.Repeated {
			arr, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%w: %s.%s: want an array", ErrArguments, path, f.Name)
			}
			items = arr
		}
		if f.Wrapper != "" {
			b = append(append(append(b, '<'), f.Wrapper...), '>')
		}
		for _, it := range items {
			var err error
			if b, err = appendElement(b, f, it, path+"."+f.Name); err != nil {
				return nil, err
			}
		}
		if f.Wrapper != "" {
			b = append(append(append(b, "</"...), f.Wrapper...), '>')
		}
	}
	return b, nil
}

func appendElement(b []byte, f gen.Field, v any, path string) ([]byte, error) {
	b = append(append(b, '<'), f.Name...)
	if f.Kind == gen.Struct && f.Struct != nil {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s: want an object", ErrArguments, path)
		}
		var err error
		if b, err = appendFields(b, f.Struct, obj, path); err != nil {
			return nil, err
		}
	} else {
		s, err := scalar(v, path)
		if err != nil {
			return nil, err
		}
		b = append(b, '>')
		b = xmltext.AppendText(b, s)
	}
	return append(append(append(b, "</"...), f.Name...), '>'), nil
}

func scalar(v any, path string) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	}
	return "", fmt.Errorf("%w: %s: want a string, number or boolean", ErrArguments, path)
}

// Answer is a payload rendered for an MCP client.
type Answer struct {
	// XML is the payload element (canonical).
	XML []byte
	// Name is the payload root's name.
	Name string
	// Fields maps each leaf element (by its path) to its text.
	Fields map[string]string
	// Text is the one non-empty leaf text when there is exactly one, else
	// the XML.
	Text string
	// Error is the text of a non-empty Error child: a tool's refusal.
	Error string
}

// PayloadOf returns the payload element of a canonical envelope.
func PayloadOf(envelope []byte) ([]byte, error) {
	i := bytes.Index(envelope, []byte("</meta>"))
	j := bytes.LastIndex(envelope, []byte("</message>"))
	if i < 0 || j < i {
		return nil, errors.New("mcp: not a canonical envelope")
	}
	return envelope[i+len("</meta>") : j], nil
}

// Render reads a payload element into an Answer.
func Render(payload []byte) (Answer, error) {
	a := Answer{XML: payload, Fields: map[string]string{}}
	dec := xml.NewDecoder(bytes.NewReader(payload))
	var stack []string
	var text strings.Builder
	leaf := false
	var order []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				a.Name = t.Name.Local
			}
			stack = append(stack, t.Name.Local)
			text.Reset()
			leaf = true
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if leaf && len(stack) > 1 {
				key := strings.Join(stack[1:], ".")
				if _, dup := a.Fields[key]; !dup {
					order = append(order, key)
				}
				a.Fields[key] = text.String()
				if key == "Error" || key == "error" {
					a.Error = text.String()
				}
			}
			leaf = false
			stack = stack[:len(stack)-1]
		}
	}
	if a.Name == "" {
		return a, errors.New("mcp: empty payload")
	}
	var nonEmpty []string
	for _, k := range order {
		if strings.TrimSpace(a.Fields[k]) != "" {
			nonEmpty = append(nonEmpty, a.Fields[k])
		}
	}
	if len(nonEmpty) == 1 {
		a.Text = nonEmpty[0]
	} else {
		a.Text = string(payload)
	}
	return a, nil
}
