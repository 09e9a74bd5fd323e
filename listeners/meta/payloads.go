package meta

import (
	"encoding/xml"
	"fmt"
	"reflect"
	"sync"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// RequestSchema asks for a capability's payload XSD (<request-schema>).
type RequestSchema struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 request-schema"`
	// Capability is the listener name asked about.
	Capability string `xml:"capability"`
}

// RequestExample asks for an example payload of a capability (<request-example>).
type RequestExample struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 request-example"`
	// Capability is the listener name asked about.
	Capability string `xml:"capability"`
}

// RequestPrompt asks for a capability's tool-prompt fragment (<request-prompt>).
type RequestPrompt struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 request-prompt"`
	// Capability is the listener name asked about.
	Capability string `xml:"capability"`
}

// ListCapabilities asks for every capability the caller may see
// (<list-capabilities/>, no content).
type ListCapabilities struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 list-capabilities"`
}

// SchemaResponse answers RequestSchema with the capability's XSD as text.
type SchemaResponse struct {
	XMLName    xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 schema-response"`
	Capability string   `xml:"capability"`
	Schema     string   `xml:"schema"`
}

// ExampleResponse answers RequestExample with an example payload as text.
type ExampleResponse struct {
	XMLName    xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 example-response"`
	Capability string   `xml:"capability"`
	Example    string   `xml:"example"`
}

// PromptResponse answers RequestPrompt with the tool-prompt fragment.
type PromptResponse struct {
	XMLName    xml.Name `xml:"https://xml-pipeline.org/ns/meta/v1 prompt-response"`
	Capability string   `xml:"capability"`
	Prompt     string   `xml:"prompt"`
}

// Capabilities answers ListCapabilities; it may be empty.
type Capabilities struct {
	XMLName    xml.Name         `xml:"https://xml-pipeline.org/ns/meta/v1 capabilities"`
	Capability []CapabilityInfo `xml:"capability"`
}

// CapabilityInfo describes one capability in Capabilities.
type CapabilityInfo struct {
	// Name is the listener name.
	Name string `xml:"name"`
	// Description is the listener's one-line description.
	Description string `xml:"description"`
	// RootTag is the local name of the listener's payload root.
	RootTag string `xml:"root-tag"`
	// Namespace is the payload root's namespace, "" (absent) for none.
	Namespace string `xml:"namespace,omitempty"`
}

// payloadGoTypes are the eight elements of meta.xsd, questions first.
var payloadGoTypes = []reflect.Type{
	reflect.TypeFor[RequestSchema](), reflect.TypeFor[RequestExample](), reflect.TypeFor[RequestPrompt](),
	reflect.TypeFor[ListCapabilities](),
	reflect.TypeFor[SchemaResponse](), reflect.TypeFor[ExampleResponse](), reflect.TypeFor[PromptResponse](),
	reflect.TypeFor[Capabilities](),
}

var (
	typesOnce sync.Once
	types     map[reflect.Type]*xmlpipe.PayloadType
	typesErr  error
)

// payloadTypes compiles the eight payload types once, each validated
// against meta.xsd itself.
func payloadTypes() (map[reflect.Type]*xmlpipe.PayloadType, error) {
	typesOnce.Do(func() {
		xsd := schemas.Meta()
		m := make(map[reflect.Type]*xmlpipe.PayloadType, len(payloadGoTypes))
		for _, t := range payloadGoTypes {
			pt, err := xmlpipe.NewPayloadType(t, xmlpipe.WithSchema(xsd))
			if err != nil {
				typesErr = fmt.Errorf("meta: %w", err)
				return
			}
			m[t] = pt
		}
		types = m
	})
	return types, typesErr
}

// PayloadTypes returns the payload types of the eight meta.xsd elements,
// questions first (request-schema, request-example, request-prompt,
// list-capabilities, schema-response, example-response, prompt-response,
// capabilities). Each validates against meta.xsd, not a derived schema.
func PayloadTypes() ([]*xmlpipe.PayloadType, error) {
	m, err := payloadTypes()
	if err != nil {
		return nil, err
	}
	out := make([]*xmlpipe.PayloadType, len(payloadGoTypes))
	for i, t := range payloadGoTypes {
		out[i] = m[t]
	}
	return out, nil
}

// payloadTypeOf is the meta.xsd payload type of one of the eight types.
func payloadTypeOf(t reflect.Type) (*xmlpipe.PayloadType, error) {
	m, err := payloadTypes()
	if err != nil {
		return nil, err
	}
	pt, ok := m[t]
	if !ok {
		return nil, fmt.Errorf("meta: %v is not a meta.xsd payload", t)
	}
	return pt, nil
}

// PayloadType returns the meta.xsd payload type of RequestSchema
// (xmlpipe.FixedPayload: the pump validates it against meta.xsd).
func (RequestSchema) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[RequestSchema]())
}

// PayloadType returns the meta.xsd payload type of RequestExample.
func (RequestExample) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[RequestExample]())
}

// PayloadType returns the meta.xsd payload type of RequestPrompt.
func (RequestPrompt) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[RequestPrompt]())
}

// PayloadType returns the meta.xsd payload type of ListCapabilities.
func (ListCapabilities) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[ListCapabilities]())
}

// PayloadType returns the meta.xsd payload type of SchemaResponse.
func (SchemaResponse) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[SchemaResponse]())
}

// PayloadType returns the meta.xsd payload type of ExampleResponse.
func (ExampleResponse) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[ExampleResponse]())
}

// PayloadType returns the meta.xsd payload type of PromptResponse.
func (PromptResponse) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[PromptResponse]())
}

// PayloadType returns the meta.xsd payload type of Capabilities.
func (Capabilities) PayloadType() (*xmlpipe.PayloadType, error) {
	return payloadTypeOf(reflect.TypeFor[Capabilities]())
}
