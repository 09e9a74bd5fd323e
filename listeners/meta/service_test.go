package meta

import (
	"encoding/xml"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Add and Sub are the payloads of the test capabilities.
type Add struct {
	A int `doc:"first term"`
	B int `doc:"second term"`
}

type Sub struct {
	XMLName xml.Name `xml:"https://xml-pipeline.org/ns/tools/calc/v1 Sub"`
	A, B    int
}

// testCatalog has "adder" (no namespace), "calc.sub" (namespaced) and a
// capability whose name meta.xsd cannot carry.
func testCatalog(t *testing.T) CatalogFunc {
	t.Helper()
	add, err := xmlpipe.PayloadTypeOf[Add]()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := xmlpipe.PayloadTypeOf[Sub]()
	if err != nil {
		t.Fatal(err)
	}
	caps := []Capability{
		{Name: "adder", Description: "Adds two integers", Payload: add},
		{Name: "calc.sub", Description: "Subtracts", Payload: sub},
		{Name: " padded", Description: "not a CapabilityName", Payload: add},
	}
	return func() []Capability { return caps }
}

func allOpen() Flags {
	return Flags{Enabled: true, AllowListCapabilities: true, SchemaRequests: AccessAuthenticated,
		ExampleRequests: AccessAuthenticated, PromptRequests: AccessAuthenticated}
}

var (
	anonymous = Caller{Name: "stranger"}
	user      = Caller{Name: "api:alice", Authenticated: true}
	admin     = Caller{Name: "api:root", Authenticated: true, Admin: true}
	peer      = Caller{Name: "gw.north", Authenticated: true, Remote: true,
		Visible: func(k Capability) bool { return k.Name == "adder" }}
)

// metaSchema validates answers as documents against meta.xsd.
func metaSchema(t *testing.T) *stage.Schema {
	t.Helper()
	s, err := stage.CompileSchema(schemas.Meta(), "mem:/schemas/meta.xsd")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkAgainstMetaXSD encodes answer with its fixed payload type and
// validates the bytes against meta.xsd.
func checkAgainstMetaXSD(t *testing.T, s *stage.Schema, answer any) {
	t.Helper()
	f, ok := answer.(xmlpipe.FixedPayload)
	if !ok {
		t.Fatalf("answer %T has no fixed payload type", answer)
	}
	pt, err := f.PayloadType()
	if err != nil {
		t.Fatal(err)
	}
	b, err := pt.AppendPayload(nil, answer)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(b); err != nil {
		t.Fatalf("answer does not validate against meta.xsd: %v\n%s", err, b)
	}
}

func TestServiceAnswers(t *testing.T) {
	cat := testCatalog(t)
	adder, _ := cat.Capability("adder")
	sub, _ := cat.Capability("calc.sub")
	withAccess := func(f func(*Flags)) Flags { fl := allOpen(); f(&fl); return fl }
	tests := []struct {
		name     string
		flags    Flags
		caller   Caller
		question any
		want     any
	}{
		{"schema", allOpen(), user, &RequestSchema{Capability: "adder"},
			&SchemaResponse{Capability: "adder", Schema: string(adder.Payload.XSD())}},
		{"schema by value", allOpen(), user, RequestSchema{Capability: "calc.sub"},
			&SchemaResponse{Capability: "calc.sub", Schema: string(sub.Payload.XSD())}},
		{"example", allOpen(), user, &RequestExample{Capability: "calc.sub"},
			&ExampleResponse{Capability: "calc.sub", Example: string(sub.Payload.Example())}},
		{"prompt", allOpen(), user, &RequestPrompt{Capability: "adder"},
			&PromptResponse{Capability: "adder", Prompt: Prompt(adder)}},
		{"admin passes authenticated", allOpen(), admin, &RequestSchema{Capability: "adder"},
			&SchemaResponse{Capability: "adder", Schema: string(adder.Payload.XSD())}},
		{"admin-only schema, admin", withAccess(func(f *Flags) { f.SchemaRequests = AccessAdmin }), admin,
			&RequestSchema{Capability: "adder"}, &SchemaResponse{Capability: "adder", Schema: string(adder.Payload.XSD())}},
		{"admin-only example, admin", withAccess(func(f *Flags) { f.ExampleRequests = AccessAdmin }), admin,
			&RequestExample{Capability: "adder"}, &ExampleResponse{Capability: "adder", Example: string(adder.Payload.Example())}},
		{"list", allOpen(), user, &ListCapabilities{}, &Capabilities{Capability: []CapabilityInfo{
			{Name: "adder", Description: "Adds two integers", RootTag: "Add"},
			{Name: "calc.sub", Description: "Subtracts", RootTag: "Sub", Namespace: "https://xml-pipeline.org/ns/tools/calc/v1"},
		}}},
		{"remote with allow_remote sees its exports", withAccess(func(f *Flags) { f.AllowRemote = true }), peer,
			&ListCapabilities{}, &Capabilities{Capability: []CapabilityInfo{{Name: "adder", Description: "Adds two integers", RootTag: "Add"}}}},
		{"remote with allow_remote asks about an export", withAccess(func(f *Flags) { f.AllowRemote = true }), peer,
			&RequestPrompt{Capability: "adder"}, &PromptResponse{Capability: "adder", Prompt: Prompt(adder)}},
		{"nothing visible lists empty", allOpen(), Caller{Name: "x", Authenticated: true, Visible: func(Capability) bool { return false }},
			&ListCapabilities{}, &Capabilities{}},
	}
	s := metaSchema(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewService(tt.flags, cat).Answer(tt.caller, tt.question)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreTypes(xml.Name{})); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			checkAgainstMetaXSD(t, s, got)
		})
	}
}

func TestServiceRefuses(t *testing.T) {
	cat := testCatalog(t)
	with := func(f func(*Flags)) Flags { fl := allOpen(); f(&fl); return fl }
	schema := &RequestSchema{Capability: "adder"}
	tests := []struct {
		name     string
		flags    Flags
		caller   Caller
		question any
	}{
		{"disabled", with(func(f *Flags) { f.Enabled = false }), admin, schema},
		{"disabled list", with(func(f *Flags) { f.Enabled = false }), admin, &ListCapabilities{}},
		{"unknown capability", allOpen(), admin, &RequestSchema{Capability: "no-such"}},
		{"unknown capability, example", allOpen(), admin, &RequestExample{Capability: "no-such"}},
		{"case differs", allOpen(), admin, &RequestSchema{Capability: "Adder"}},
		{"anonymous schema", allOpen(), anonymous, schema},
		{"anonymous example", allOpen(), anonymous, &RequestExample{Capability: "adder"}},
		{"anonymous prompt", allOpen(), anonymous, &RequestPrompt{Capability: "adder"}},
		{"anonymous list", allOpen(), anonymous, &ListCapabilities{}},
		{"admin-only schema, user", with(func(f *Flags) { f.SchemaRequests = AccessAdmin }), user, schema},
		{"admin-only prompt, user", with(func(f *Flags) { f.PromptRequests = AccessAdmin }), user, &RequestPrompt{Capability: "adder"}},
		{"none schema, admin", with(func(f *Flags) { f.SchemaRequests = AccessNone }), admin, schema},
		{"none example, admin", with(func(f *Flags) { f.ExampleRequests = AccessNone }), admin, &RequestExample{Capability: "adder"}},
		{"none prompt, admin", with(func(f *Flags) { f.PromptRequests = AccessNone }), admin, &RequestPrompt{Capability: "adder"}},
		{"unknown access level", with(func(f *Flags) { f.SchemaRequests = "everyone" }), admin, schema},
		{"list off", with(func(f *Flags) { f.AllowListCapabilities = false }), admin, &ListCapabilities{}},
		{"remote without allow_remote", allOpen(), peer, schema},
		{"remote without allow_remote, list", allOpen(), peer, &ListCapabilities{}},
		{"remote without allow_remote, admin too", allOpen(), Caller{Name: "gw", Admin: true, Authenticated: true, Remote: true}, schema},
		{"remote asks about an unexported one", with(func(f *Flags) { f.AllowRemote = true }), peer, &RequestSchema{Capability: "calc.sub"}},
		{"invisible to a local caller", allOpen(), Caller{Name: "x", Authenticated: true, Visible: func(Capability) bool { return false }}, schema},
	}
	want := failure.CannedText(failure.ErrNoRoute)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewService(tt.flags, cat).Answer(tt.caller, tt.question)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Answer = %v, %v; want ErrRefused", got, err)
			}
			if got != nil {
				t.Errorf("refused question answered with %v", got)
			}
			// The caller is told exactly what a message to a missing
			// listener is told, whatever the reason.
			if text := failure.CannedText(err); text != want {
				t.Errorf("canned text %q, want %q", text, want)
			}
		})
	}
}

func TestServiceNotAQuestion(t *testing.T) {
	for _, q := range []any{nil, &SchemaResponse{}, "request-schema", (*RequestSchema)(nil)} {
		if _, err := NewService(allOpen(), testCatalog(t)).Answer(admin, q); !errors.Is(err, ErrNotQuestion) {
			t.Errorf("Answer(%#v) error %v, want ErrNotQuestion", q, err)
		}
	}
}
