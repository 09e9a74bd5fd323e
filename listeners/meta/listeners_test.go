package meta

import (
	"context"
	"errors"
	"testing"

	"encoding/xml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

func TestListenersAnswerAndRefuse(t *testing.T) {
	cat := testCatalog(t)
	adder, _ := cat.Capability("adder")
	var asked []string
	callers := CallersFunc(func(from string) Caller {
		asked = append(asked, from)
		if from == "api:alice" {
			return user
		}
		return anonymous
	})
	ls, err := Listeners(NewService(allOpen(), cat), callers)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range ls {
		names = append(names, l.Name)
		if !IsCoreListener(l.Name) {
			t.Errorf("%s is not reported as a core listener", l.Name)
		}
	}
	want := []string{"core.request-schema", "core.request-example", "core.request-prompt", "core.list-capabilities"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	schema := ls[0]
	if !schema.Payload.Matches("request-schema", "https://xml-pipeline.org/ns/meta/v1") {
		t.Fatalf("core.request-schema takes {%s}%s", schema.Payload.Namespace(), schema.Payload.Name())
	}

	resp, err := schema.Handler.Handle(context.Background(), &RequestSchema{Capability: "adder"},
		xmlpipe.Metadata{From: "api:alice", ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response %T, want Respond", resp)
	}
	if diff := cmp.Diff(&SchemaResponse{Capability: "adder", Schema: string(adder.Payload.XSD())}, r.Payload,
		cmpopts.IgnoreTypes(xml.Name{})); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}

	resp, err = schema.Handler.Handle(context.Background(), &RequestSchema{Capability: "adder"},
		xmlpipe.Metadata{From: "stranger", ThreadID: "t"})
	if !errors.Is(err, ErrRefused) || resp != nil {
		t.Fatalf("stranger's question: %v, %v; want ErrRefused", resp, err)
	}
	if diff := cmp.Diff([]string{"api:alice", "stranger"}, asked); diff != "" {
		t.Errorf("classified (-want +got):\n%s", diff)
	}
}

func TestListenersNeedServiceAndCallers(t *testing.T) {
	if _, err := Listeners(nil, CallersFunc(func(string) Caller { return user })); err == nil {
		t.Error("Listeners without a service succeeded")
	}
	if _, err := Listeners(NewService(allOpen(), testCatalog(t)), nil); err == nil {
		t.Error("Listeners without callers succeeded")
	}
}

// TestQuestionsDecode reads the questions as the pump does — validated
// against meta.xsd, then decoded — including list-capabilities with
// whitespace content (the empty token) and hyphenated, namespaced names.
func TestQuestionsDecode(t *testing.T) {
	tests := []struct {
		name string
		body string
		want any
	}{
		{"request-schema", `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>calculator.add</capability></request-schema>`,
			&RequestSchema{Capability: "calculator.add"}},
		{"request-prompt", `<request-prompt xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>a b</capability></request-prompt>`,
			&RequestPrompt{Capability: "a b"}},
		{"list-capabilities empty", `<list-capabilities xmlns="https://xml-pipeline.org/ns/meta/v1"/>`, &ListCapabilities{}},
		{"list-capabilities whitespace", "<list-capabilities xmlns=\"https://xml-pipeline.org/ns/meta/v1\">\n  </list-capabilities>", &ListCapabilities{}},
	}
	in, err := stage.NewIngress(stage.IngressConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := PayloadTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := stage.AppendEnvelope(nil, "api:alice", "", "6f1c2d3e-4b5a-4c6d-8e7f-8091a2b3c4d5", []byte(tt.body))
			m, err := in.Read(env)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var pt *xmlpipe.PayloadType
			for _, p := range pts {
				if p.Matches(m.PayloadName, m.PayloadNS) {
					pt = p
				}
			}
			if pt == nil {
				t.Fatalf("no meta payload type for {%s}%s", m.PayloadNS, m.PayloadName)
			}
			got, _, err := m.Decode(pt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreTypes(xml.Name{})); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQuestionsRejectedByMetaXSD shows the questions are held to meta.xsd,
// not to a schema derived from the Go types.
func TestQuestionsRejectedByMetaXSD(t *testing.T) {
	tests := map[string]string{
		"text in list-capabilities":  `<list-capabilities xmlns="https://xml-pipeline.org/ns/meta/v1">all</list-capabilities>`,
		"child in list-capabilities": `<list-capabilities xmlns="https://xml-pipeline.org/ns/meta/v1"><x/></list-capabilities>`,
		"padded capability name":     `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability> adder</capability></request-schema>`,
		"empty capability name":      `<request-example xmlns="https://xml-pipeline.org/ns/meta/v1"><capability></capability></request-example>`,
		"capability in no namespace": `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability xmlns="">adder</capability></request-schema>`,
	}
	in, err := stage.NewIngress(stage.IngressConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := PayloadTypes()
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := in.Read(stage.AppendEnvelope(nil, "api:alice", "", "6f1c2d3e-4b5a-4c6d-8e7f-8091a2b3c4d5", []byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for _, p := range pts {
				if p.Matches(m.PayloadName, m.PayloadNS) {
					if err := m.ValidatePayload(p); !errors.Is(err, failure.ErrPayloadInvalid) {
						t.Fatalf("validate: %v, want ErrPayloadInvalid", err)
					}
					return
				}
			}
			t.Fatalf("no meta payload type for {%s}%s", m.PayloadNS, m.PayloadName)
		})
	}
}
