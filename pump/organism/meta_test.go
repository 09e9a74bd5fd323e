package organism

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/meta"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

const (
	askSchema = `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>greeter</capability></request-schema>`
	askList   = `<list-capabilities xmlns="https://xml-pipeline.org/ns/meta/v1"/>`
)

// startMeta assembles the hello organism with edit applied to its
// configuration and starts it.
func startMeta(t *testing.T, edit func(*config.Organism), opts Options) *Organism {
	t.Helper()
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	o, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Shutdown(context.Background()) })
	return o
}

// askMeta injects body from from (no <to>: routed by its root tag) and returns
// the reply or <huh> its conversation ends with.
func askMeta(t *testing.T, o *Organism, from, body string) pump.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan pump.Event, 16)
	env := stage.AppendEnvelope(nil, from, "", stage.NewThreadID(), []byte(body))
	// A message refused at ingress is answered with a <huh> to the outlet
	// and reported by InjectWait too; the <huh> is what the caller sees.
	_, err := o.Pump.InjectWait(ctx, env, pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply || e.Kind == pump.EventHuh {
			got <- e
		}
	}))
	if err != nil {
		t.Logf("inject from %s: %v", from, err)
	}
	select {
	case e := <-got:
		return e
	case <-ctx.Done():
		t.Fatalf("no answer to %s from %s", body, from)
		return pump.Event{}
	}
}

// answerBytes returns the payload element of a reply envelope, checked
// against meta.xsd as a document of its own.
func answerBytes(t *testing.T, e pump.Event, name string) []byte {
	t.Helper()
	if e.Kind != pump.EventReply {
		t.Fatalf("got %s (%s), want a reply", e.Kind, e.Error)
	}
	b, err := stage.CanonicalizeChild(e.Envelope, schemas.MetaNS, name)
	if err != nil {
		t.Fatalf("reply %s: %v", e.Envelope, err)
	}
	s, err := stage.CompileSchema(schemas.Meta(), "mem:/schemas/meta.xsd")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(b); err != nil {
		t.Fatalf("answer does not validate against meta.xsd: %v\n%s", err, b)
	}
	return b
}

func TestMetaRequestSchemaThroughThePump(t *testing.T) {
	o := startMeta(t, nil, Options{})
	e := askMeta(t, o, "console", askSchema)
	answerBytes(t, e, "schema-response")
	r, ok := e.Payload.(*meta.SchemaResponse)
	if !ok {
		t.Fatalf("reply payload %T", e.Payload)
	}
	greeter, _ := o.Pump.Lookup("greeter")
	if r.Capability != "greeter" || r.Schema != string(greeter.Payload.XSD()) {
		t.Fatalf("schema-response for %q is not greeter's XSD:\n%s", r.Capability, r.Schema)
	}
	if _, err := stage.CompileSchema([]byte(r.Schema), "mem:/greeter.xsd"); err != nil {
		t.Fatalf("returned schema does not compile: %v", err)
	}
	if e.From != meta.NameRequestSchema {
		t.Errorf("answer from %q", e.From)
	}
}

func TestMetaAnswersValidate(t *testing.T) {
	o := startMeta(t, nil, Options{})
	for _, q := range []struct{ body, answer string }{
		{`<request-example xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>shouter</capability></request-example>`, "example-response"},
		{`<request-prompt xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>greeter</capability></request-prompt>`, "prompt-response"},
		{"<list-capabilities xmlns=\"https://xml-pipeline.org/ns/meta/v1\">\n</list-capabilities>", "capabilities"},
	} {
		answerBytes(t, askMeta(t, o, "console", q.body), q.answer)
	}
	e := askMeta(t, o, "api:alice", askList)
	answerBytes(t, e, "capabilities")
	var names []string
	for _, c := range e.Payload.(*meta.Capabilities).Capability {
		names = append(names, c.Name)
	}
	// The organism's own system.* and core.* listeners are not capabilities.
	if diff := cmp.Diff([]string{"greeter", "shouter", "response-handler"}, names); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
}

func TestMetaRefusalsReadAlike(t *testing.T) {
	o := startMeta(t, nil, Options{})
	// What a message to a root tag nobody handles is told.
	unrouted := askMeta(t, o, "console", `<Nobody xmlns=""/>`)
	if unrouted.Kind != pump.EventHuh {
		t.Fatalf("unrouted: %s", unrouted.Kind)
	}
	cases := []struct{ name, from, body string }{
		{"unauthenticated", "stranger", askSchema},
		{"unauthenticated list", "stranger", askList},
		{"unknown capability", "console", `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>no-such</capability></request-schema>`},
		{"own listener", "console", `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>system.boot</capability></request-schema>`},
		{"core listener", "console", `<request-prompt xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>core.request-schema</capability></request-prompt>`},
	}
	for _, c := range cases {
		e := askMeta(t, o, c.from, c.body)
		if e.Kind != pump.EventHuh || e.Error != unrouted.Error {
			t.Errorf("%s: %s %q, want the <huh> %q", c.name, e.Kind, e.Error, unrouted.Error)
		}
	}
	// Switched off, the listeners are not there; the caller is told the same.
	off := startMeta(t, func(c *config.Organism) { c.Meta.Enabled = false }, Options{})
	if _, ok := off.Pump.Lookup(meta.NameRequestSchema); ok {
		t.Error("meta disabled, core.request-schema registered")
	}
	if e := askMeta(t, off, "console", askSchema); e.Kind != pump.EventHuh || e.Error != unrouted.Error {
		t.Errorf("disabled: %s %q, want the <huh> %q", e.Kind, e.Error, unrouted.Error)
	}
}

func TestMetaRemotePeers(t *testing.T) {
	remote := func(from string) (func(meta.Capability) bool, bool) {
		if from != "gw.north" {
			return nil, false
		}
		return func(k meta.Capability) bool { return k.Name == "greeter" }, true
	}
	closed := startMeta(t, nil, Options{MetaRemote: remote})
	if e := askMeta(t, closed, "gw.north", askList); e.Kind != pump.EventHuh {
		t.Errorf("allow_remote off: peer got %s", e.Kind)
	}
	open := startMeta(t, func(c *config.Organism) { c.Meta.AllowRemote = true }, Options{MetaRemote: remote})
	e := askMeta(t, open, "gw.north", askList)
	answerBytes(t, e, "capabilities")
	want := &meta.Capabilities{Capability: []meta.CapabilityInfo{{Name: "greeter", Description: "Greeting agent - forwards to shouter", RootTag: "Greeting"}}}
	got := e.Payload.(*meta.Capabilities)
	got.XMLName = want.XMLName
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peer's capabilities (-want +got):\n%s", diff)
	}
	if e := askMeta(t, open, "gw.north", `<request-schema xmlns="https://xml-pipeline.org/ns/meta/v1"><capability>shouter</capability></request-schema>`); e.Kind != pump.EventHuh {
		t.Errorf("peer asked about an unexported capability and got %s", e.Kind)
	}
}

func TestMetaAdminRoleFromTheUserStore(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for name, role := range map[string]string{"alice": "admin", "bob": "viewer"} {
		if err := s.PutUser(context.Background(), store.UserRow{Name: name, PasswordHash: "not-a-real-hash", Role: role}); err != nil {
			t.Fatal(err)
		}
	}
	o := startMeta(t, func(c *config.Organism) { c.Meta.AllowSchemaRequests = config.AccessAdmin }, Options{Store: s})
	answerBytes(t, askMeta(t, o, "websocket:alice", askSchema), "schema-response")
	if e := askMeta(t, o, "websocket:bob", askSchema); e.Kind != pump.EventHuh {
		t.Errorf("viewer asked an admin-only question and got %s", e.Kind)
	}
	// bob is still authenticated: list-capabilities is answered.
	answerBytes(t, askMeta(t, o, "api:bob", askList), "capabilities")
}
