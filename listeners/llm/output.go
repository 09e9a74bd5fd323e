package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// outputType returns the payload the turn's answer must be, nil for text:
// the caller's own payload when the caller is a listener that takes no text
// (stage.TakesText: a payload with no text field, or one whose other fields
// a text answer would leave made up — a Weather's TempC beside its City;
// the answer can only reach it in that payload), else the agent's declared
// Response. asText reports an answer that is checked against Response but
// reaches its caller as text (the JSON in the caller's text payload: an
// agent calling another takes text).
func (a *Agent) outputType(st *turnState) (out *xmlpipe.PayloadType, asText bool) {
	if st.callerType != nil {
		if !stage.TakesText(st.callerType.GoType()) {
			return st.callerType, false
		}
		return a.Response, a.Response != nil
	}
	if strings.EqualFold(st.caller, a.Name) {
		return nil, false // an answer to itself (XML self-iteration) is text
	}
	return a.Response, false
}

// schemaOf is the JSON Schema of a payload (gen.JSONSchema: the derivation
// the MCP bridge and the tools share).
func schemaOf(pt *xmlpipe.PayloadType) json.RawMessage {
	b, err := json.Marshal(gen.JSONSchema(pt.Model()))
	if err != nil {
		return emptyObjectSchema
	}
	return b
}

// structured turns the model's JSON answer into the answer payload: out
// written by codec.AppendJSON (presence-preserving, nothing coerced) and
// sent as written, for the pump to validate like any payload — or, asText,
// checked the same way and sent as compact JSON text. An answer that does
// not fit returns no response and the refusal to tell the model.
func (a *Agent) structured(md xmlpipe.Metadata, out *xmlpipe.PayloadType, asText bool, content string) (xmlpipe.Response, string) {
	data := []byte(strings.TrimSpace(content))
	xml, err := codec.AppendJSON(nil, out.Model(), data, codec.JSONOptions{EmptyNS: true})
	if err != nil {
		return nil, fmt.Sprintf("Your answer does not fit the required %s format: %v. Answer again with only a JSON "+
			"object that matches the schema.", out.Name(), err)
	}
	if !asText {
		return xmlpipe.Respond(&xmlpipe.Encoded{Type: out, XML: xml}), ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, data) != nil {
		buf.Reset()
		buf.Write(data)
	}
	return a.answer(md, buf.String()), ""
}
