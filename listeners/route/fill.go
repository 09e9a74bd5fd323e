package route

import (
	"context"
	"fmt"
	"sync"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Filler builds the payload of the selected capability from the need (seed
// 000 §10.2: the form filler). It runs only after masking, for the one
// capability selected: a filler never spends effort (a model call) on a
// capability the caller may not use.
type Filler interface {
	Fill(ctx context.Context, need string, c Capability) (Filled, error)
}

// FillerFunc adapts a function to Filler.
type FillerFunc func(ctx context.Context, need string, c Capability) (Filled, error)

// Fill calls f.
func (f FillerFunc) Fill(ctx context.Context, need string, c Capability) (Filled, error) {
	return f(ctx, need, c)
}

// Filled is a payload built for a capability.
type Filled struct {
	// Payload is the payload element, valid against the capability's
	// schema, with xmlns="" on a root without a namespace (as it sits in an
	// envelope).
	Payload []byte
	// JSON is the payload's JSON form as the filler built it.
	JSON []byte
	// By names what filled it: a model of the ladder, or "extractive".
	By string
	// Attempts are the tries, the successful one last.
	Attempts []Attempt
}

// CheckPayload turns a JSON form into c's payload element and validates it
// against c's schema: the check every filler's answer passes
// (codec.AppendJSON: the JSON must fit the payload type exactly, nothing
// coerced; then the listener's XSD). It returns the payload element.
func CheckPayload(c Capability, jsonForm []byte) ([]byte, error) {
	if c.Payload == nil {
		return nil, fmt.Errorf("%s has no payload type", c.Name)
	}
	payload, err := codec.AppendJSON(nil, c.Payload.Model(), jsonForm, codec.JSONOptions{EmptyNS: true})
	if err != nil {
		return nil, err
	}
	s, err := schemaOf(c.Payload)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(payload); err != nil {
		return nil, fmt.Errorf("not valid against %s's schema: %w", c.Name, err)
	}
	return payload, nil
}

// schemas caches the compiled schema of each payload type.
var schemas sync.Map // *xmlpipe.PayloadType → *stage.Schema

// schemaOf returns pt's schema compiled for validating a payload element on
// its own.
func schemaOf(pt *xmlpipe.PayloadType) (*stage.Schema, error) {
	if s, ok := schemas.Load(pt); ok {
		return s.(*stage.Schema), nil
	}
	s, err := stage.CompileSchema(pt.XSD(), "mem:/schemas/route/"+pt.Name()+".xsd")
	if err != nil {
		return nil, err
	}
	v, _ := schemas.LoadOrStore(pt, s)
	return v.(*stage.Schema), nil
}
