package memory

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
)

// Remember asks to remember something: the arguments of the remember tool
// and the payload of the memory listener.
type Remember struct {
	// Content is what to remember.
	Content string `doc:"What to remember, in a sentence or a few: a fact about the user, a preference, a decision. Never a password, key, token or card number."`
	// Tags are words to find it by.
	Tags []string `xml:"Tags>Tag,omitempty" doc:"Words to find it by later (optional)."`
}

// Recall asks for memories: the arguments of the recall tool.
type Recall struct {
	// Query holds the words to look for ("": the newest memories).
	Query string `xml:",omitempty" doc:"Words to look for in the memories (any of them matches); leave it out for the most recent ones."`
	// Limit caps how many come back.
	Limit int `xml:",omitempty" doc:"At most this many memories (default 5, at most 20)."`
}

// Remembered is the memory listener's answer: the memory stored and the
// consent that let it in.
type Remembered struct {
	// ID names the memory (DELETE /api/v1/memory/{id} forgets it).
	ID string
	// Consent is the approval that allowed it, or policy:always.
	Consent string
	// Message says so in words, for the model.
	Message string
}

// payload types, derived once.
var (
	rememberType = mustType[Remember]()
	recallType   = mustType[Recall]()
)

func mustType[T any]() *xmlpipe.PayloadType {
	pt, err := xmlpipe.NewPayloadType(reflect.TypeFor[T]())
	if err != nil {
		panic(fmt.Sprintf("memory: payload type: %v", err))
	}
	return pt
}

// RememberType is the memory listener's payload type.
func RememberType() *xmlpipe.PayloadType { return rememberType }

// parameters is the JSON Schema of a payload type's JSON form: the tool's
// parameters.
func parameters(pt *xmlpipe.PayloadType) json.RawMessage {
	b, err := json.Marshal(gen.JSONSchema(pt.Model()))
	if err != nil {
		panic(fmt.Sprintf("memory: parameters of %s: %v", pt.Name(), err))
	}
	return b
}

// decodeArgs reads a tool call's JSON arguments as a payload of type pt,
// the way the agent loop reads a call to a peer (codec.AppendJSON: nothing
// coerced, unknown members refused), and returns it with its XML.
func decodeArgs[T any](pt *xmlpipe.PayloadType, args []byte) (*T, []byte, error) {
	x, err := codec.AppendJSON(nil, pt.Model(), args, codec.JSONOptions{EmptyNS: true})
	if err != nil {
		return nil, nil, err
	}
	v, err := pt.Decode(x)
	if err != nil {
		return nil, nil, err
	}
	p, ok := v.(*T)
	if !ok {
		return nil, nil, fmt.Errorf("memory: decoded %T, want %T", v, p)
	}
	return p, x, nil
}
