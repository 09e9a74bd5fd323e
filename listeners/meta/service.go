package meta

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Errors of Service.Answer.
var (
	// ErrRefused is the one answer to a question the flags refuse and to a
	// question about a capability that does not exist or that the caller
	// may not see. It wraps failure.ErrNoRoute, so the caller's <huh>
	// carries the same canned text as a message to a listener that does not
	// exist — the text it would get were meta introspection switched off —
	// and reveals nothing about the organism's topology.
	ErrRefused = fmt.Errorf("meta: question refused: %w", failure.ErrNoRoute)
	// ErrNotQuestion: Answer was given a value that is not one of the four
	// meta.xsd questions (a programming error, not a caller's).
	ErrNotQuestion = errors.New("meta: not a meta question")
)

// capabilityName is meta.xsd's CapabilityName: non-empty, no leading or
// trailing whitespace, one line (XSD's "." excludes \n and \r).
var capabilityName = regexp.MustCompile(`^\S(?:[^\n\r]*\S)?$`)

// Service answers meta questions under the organism's flags. It is safe
// for concurrent use if its Catalog is.
type Service struct {
	flags   Flags
	catalog Catalog
}

// NewService returns a Service that applies flags and describes the
// capabilities of catalog.
func NewService(flags Flags, catalog Catalog) *Service {
	return &Service{flags: flags, catalog: catalog}
}

// Answer answers question (a RequestSchema, RequestExample, RequestPrompt or
// ListCapabilities, or a pointer to one) asked by c, returning a pointer to
// the answer payload: *SchemaResponse, *ExampleResponse, *PromptResponse or
// *Capabilities.
//
// The rules, in order: nothing is answered unless meta is enabled; a
// federation peer (c.Remote) is answered only with AllowRemote; a question
// about one capability needs the caller to pass that question's access
// level (admin: admins; authenticated: authenticated callers and admins;
// none: nobody) and the capability to exist and be visible to the caller;
// list-capabilities needs AllowListCapabilities and an authenticated caller
// (or an admin) and lists only what the caller may see. Every refusal, and
// every unknown or invisible capability, is ErrRefused (wrapped with the
// reason, for the log).
func (s *Service) Answer(c Caller, question any) (answer any, err error) {
	if !s.flags.Enabled {
		return nil, fmt.Errorf("%w: meta introspection is disabled (meta.enabled)", ErrRefused)
	}
	if c.Remote && !s.flags.AllowRemote {
		return nil, fmt.Errorf("%w: %q is a federation peer and meta.allow_remote is off", ErrRefused, c.Name)
	}
	switch q := deref(question).(type) {
	case RequestSchema:
		k, err := s.capability(c, "request-schema", "allow_schema_requests", s.flags.SchemaRequests, q.Capability)
		if err != nil {
			return nil, err
		}
		return &SchemaResponse{Capability: k.Name, Schema: string(k.Payload.XSD())}, nil
	case RequestExample:
		k, err := s.capability(c, "request-example", "allow_example_requests", s.flags.ExampleRequests, q.Capability)
		if err != nil {
			return nil, err
		}
		return &ExampleResponse{Capability: k.Name, Example: string(k.Payload.Example())}, nil
	case RequestPrompt:
		k, err := s.capability(c, "request-prompt", "allow_prompt_requests", s.flags.PromptRequests, q.Capability)
		if err != nil {
			return nil, err
		}
		return &PromptResponse{Capability: k.Name, Prompt: Prompt(k)}, nil
	case ListCapabilities:
		list, err := s.list(c)
		if err != nil {
			return nil, err // not a typed nil in answer
		}
		return list, nil
	}
	return nil, fmt.Errorf("%w: %T", ErrNotQuestion, question)
}

// deref returns the value a non-nil pointer points to, else v.
func deref(v any) any {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}

// capability applies one question's access level (the meta: flag key)
// and finds the capability called name, visible to c.
func (s *Service) capability(c Caller, question, key string, access Access, name string) (Capability, error) {
	if !access.allows(c) {
		return Capability{}, fmt.Errorf("%w: %s: meta.%s is %q and %q does not qualify", ErrRefused, question, key, access, c.Name)
	}
	k, ok := s.catalog.Capability(name)
	if !ok || k.Payload == nil || !c.sees(k) {
		return Capability{}, fmt.Errorf("%w: %s: no capability %q visible to %q", ErrRefused, question, name, c.Name)
	}
	return k, nil
}

// list answers list-capabilities.
func (s *Service) list(c Caller) (*Capabilities, error) {
	if !s.flags.AllowListCapabilities {
		return nil, fmt.Errorf("%w: list-capabilities: meta.allow_list_capabilities is off", ErrRefused)
	}
	if !AccessAuthenticated.allows(c) {
		return nil, fmt.Errorf("%w: list-capabilities answers authenticated callers only (a logged-in session, a listener, the console) and %q is not one", ErrRefused, c.Name)
	}
	out := &Capabilities{}
	for _, k := range s.catalog.Capabilities() {
		// A name meta.xsd cannot carry is left out rather than failing
		// the whole answer.
		if k.Payload == nil || !capabilityName.MatchString(k.Name) || !c.sees(k) {
			continue
		}
		out.Capability = append(out.Capability, CapabilityInfo{Name: k.Name, Description: k.Description,
			RootTag: k.Payload.Name(), Namespace: k.Payload.Namespace()})
	}
	return out, nil
}

// Prompt returns the tool-prompt fragment of a capability: the section gen
// writes about a peer in an agent's usage instructions (its heading,
// description, schema and example).
func Prompt(k Capability) string {
	var t *gen.Type
	if k.Payload != nil {
		t = k.Payload.Model()
	}
	return gen.PromptSection(gen.Peer{Name: k.Name, Description: k.Description, Type: t})
}
