package mcp

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Answer is a payload rendered for an MCP client.
type Answer struct {
	// XML is the payload element (canonical).
	XML []byte
	// Name is the payload root's name.
	Name string
	// Fields maps each leaf element (by its path) to its text (a string);
	// a path that occurs more than once (a list) maps to all its texts, in
	// order (a []string).
	Fields map[string]any
	// Text is the one non-empty leaf text when there is exactly one (one
	// occurrence of one leaf), else the XML.
	Text string
	// Error is the text of a non-empty Error child: a tool's refusal.
	Error string
}

// PayloadOf returns the payload element of a canonical envelope, whatever
// the root's prefix (stage.EnvelopePayload).
func PayloadOf(envelope []byte) ([]byte, error) {
	p, ok := stage.EnvelopePayload(envelope)
	if !ok {
		return nil, errors.New("mcp: not a canonical envelope")
	}
	return p, nil
}

// Render reads a payload element into an Answer.
func Render(payload []byte) (Answer, error) {
	a := Answer{XML: payload, Fields: map[string]any{}}
	texts := map[string][]string{}
	var nonEmpty []string // every non-empty leaf text, repeats included
	dec := xml.NewDecoder(bytes.NewReader(payload))
	var stack []string
	var text strings.Builder
	leaf := false
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
				texts[key] = append(texts[key], text.String())
				if strings.TrimSpace(text.String()) != "" {
					nonEmpty = append(nonEmpty, text.String())
				}
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
	for key, ts := range texts {
		if len(ts) == 1 {
			a.Fields[key] = ts[0]
		} else {
			a.Fields[key] = ts
		}
	}
	if len(nonEmpty) == 1 {
		a.Text = nonEmpty[0]
	} else {
		a.Text = string(payload)
	}
	return a, nil
}
