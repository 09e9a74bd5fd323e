package meta

import (
	"context"
	"fmt"
	"reflect"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// The registered names of the four core listeners (reserved names: the
// organism registers them as system listeners).
const (
	NameRequestSchema    = "core.request-schema"
	NameRequestExample   = "core.request-example"
	NameRequestPrompt    = "core.request-prompt"
	NameListCapabilities = "core.list-capabilities"
)

// Listener is one core listener for the organism to register: its name,
// description, payload contract (validated against meta.xsd) and handler.
type Listener struct {
	Name        string
	Description string
	Payload     *xmlpipe.PayloadType
	Handler     xmlpipe.Handler
}

// IsCoreListener reports whether name is one of the four core listeners.
func IsCoreListener(name string) bool {
	switch name {
	case NameRequestSchema, NameRequestExample, NameRequestPrompt, NameListCapabilities:
		return true
	}
	return false
}

// withinProfile narrows what c sees to the listeners profile reaches (the
// profile of the thread the question travels on): a listener outside the
// caller's profile does not exist for it here either.
func withinProfile(c Caller, profile xmlpipe.Profile) Caller {
	if profile == nil {
		return c
	}
	visible := c.Visible
	c.Visible = func(k Capability) bool {
		return profile.Reaches(k.Name) && (visible == nil || visible(k))
	}
	return c
}

// Listeners returns the four core listeners answering meta questions with
// s. Each handler classifies the message's <from> with callers (seeing only
// what the profile of the question's thread reaches), answers
// with xmlpipe.Respond, and returns the Service's error when the question
// is refused: the pump answers a handler error with a <huh> to the caller
// (never silence), whose canned text for ErrRefused is the one a message to
// a listener that does not exist gets.
func Listeners(s *Service, callers Callers) ([]Listener, error) {
	if s == nil || callers == nil {
		return nil, fmt.Errorf("meta: listeners need a service and callers")
	}
	defs := []struct {
		name, desc string
		t          reflect.Type
	}{
		{NameRequestSchema, "Answers request-schema: a capability's payload XSD", reflect.TypeFor[RequestSchema]()},
		{NameRequestExample, "Answers request-example: an example payload of a capability", reflect.TypeFor[RequestExample]()},
		{NameRequestPrompt, "Answers request-prompt: a capability's tool-prompt fragment", reflect.TypeFor[RequestPrompt]()},
		{NameListCapabilities, "Answers list-capabilities: the capabilities the caller may see", reflect.TypeFor[ListCapabilities]()},
	}
	h := xmlpipe.HandlerFunc(func(_ context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		answer, err := s.Answer(withinProfile(callers.Classify(md.From), md.Profile), payload)
		if err != nil {
			return nil, err
		}
		return xmlpipe.Respond(answer), nil
	})
	out := make([]Listener, len(defs))
	for i, d := range defs {
		pt, err := payloadTypeOf(d.t)
		if err != nil {
			return nil, err
		}
		out[i] = Listener{Name: d.name, Description: d.desc, Payload: pt, Handler: h}
	}
	return out, nil
}
