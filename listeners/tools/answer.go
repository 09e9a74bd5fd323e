package tools

import (
	"encoding/json"
	"reflect"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Callers tells a tool which payload a listener takes, so a result can reach
// a caller that does not take the tool's result type.
type Callers interface {
	PayloadOf(listener string) (*xmlpipe.PayloadType, bool)
}

// CallersFunc adapts a function to Callers.
type CallersFunc func(listener string) (*xmlpipe.PayloadType, bool)

// PayloadOf calls f.
func (f CallersFunc) PayloadOf(listener string) (*xmlpipe.PayloadType, bool) { return f(listener) }

// Answer returns a tool's result to its caller (md.From): as the result
// payload itself, unless the caller is a listener that takes another payload
// with a text field — an LLM agent, whose input is text — which then gets
// the result's JSON form (codec.JSONOf: what its model reads as the tool's
// result) as that text. External callers (a console, an MCP client) and
// callers without a text field get the result payload.
func Answer(c Callers, md xmlpipe.Metadata, result any) xmlpipe.Response {
	if c == nil {
		return xmlpipe.Respond(result)
	}
	rv := reflect.TypeOf(result)
	if rv == nil || rv.Kind() != reflect.Pointer {
		return xmlpipe.Respond(result)
	}
	caller, ok := c.PayloadOf(md.From)
	if !ok || caller == nil || caller.GoType() == rv.Elem() {
		return xmlpipe.Respond(result)
	}
	rt, err := xmlpipe.NewPayloadType(reflect.TypeOf(result))
	if err != nil {
		return xmlpipe.Respond(result)
	}
	obj, err := codec.JSONOf(rt.Model(), result)
	if err != nil {
		return xmlpipe.Respond(result)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return xmlpipe.Respond(result)
	}
	if v, ok := stage.NewTextPayload(caller.GoType(), string(b)); ok {
		return xmlpipe.Respond(v)
	}
	return xmlpipe.Respond(result)
}
