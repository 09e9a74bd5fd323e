package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestGeneratedSchemasAreFresh fails when schemas/<listener>/ differs from what
// the payload types derive: run `go generate ./...` (or `make generate`).
func TestGeneratedSchemasAreFresh(t *testing.T) {
	if err := gen.CheckTree("../../schemas", Builtin().GenEntries()); err != nil {
		t.Fatal(err)
	}
}

func TestPythonAliasesResolve(t *testing.T) {
	c := Builtin()
	tests := []struct{ payload, handler string }{
		{"handlers.hello.Greeting", "handlers.hello.handle_greeting"},
		{"handlers.hello.GreetingResponse", "handlers.hello.handle_shout"},
		{"handlers.hello.ShoutedResponse", "handlers.hello.handle_response_print"},
		{"hello.Greeting", "hello.Greeter"},
		{"handlers.hello:Greeting", "handlers.hello:handle_greeting"},
		// The reference's older config (handlers/console.py) names these.
		{"handlers.console.Greeting", "handlers.hello.handle_greeting"},
		{"handlers.console.ShoutedResponse", "handlers.console.handle_shouted_response"},
	}
	for _, tc := range tests {
		pt, err := c.PayloadType(tc.payload)
		if err != nil {
			t.Fatalf("%s: %v", tc.payload, err)
		}
		if _, err := c.Handler(tc.handler, pt, Env{}); err != nil {
			t.Fatalf("%s: %v", tc.handler, err)
		}
	}
}

func TestLookupErrors(t *testing.T) {
	c := Builtin()
	if _, err := c.PayloadType("handlers.hello.Nope"); !errors.Is(err, ErrUnknownPayload) {
		t.Fatalf("err = %v", err)
	}
	pt, err := xmlpipe.PayloadTypeOf[hello.Greeting]()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Handler("handlers.hello.handle_shout", pt, Env{}); !errors.Is(err, ErrPayloadMismatch) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Handler("nope", pt, Env{}); !errors.Is(err, ErrUnknownHandler) {
		t.Fatalf("err = %v", err)
	}
}

// PayloadNames and HandlerNames list every name organism.yaml may give —
// the catalog's own and the Python reference's aliases — each for its kind.
func TestAcceptedNames(t *testing.T) {
	c := Builtin()
	tests := []struct {
		list     string
		names    []string
		has, not []string
	}{
		{"PayloadNames", c.PayloadNames(), []string{"hello.Greeting", "handlers.hello.Greeting"},
			[]string{"hello.Greeter", "handlers.hello.handle_greeting"}},
		{"HandlerNames", c.HandlerNames(), []string{"hello.Greeter", "handlers.hello.handle_greeting"},
			[]string{"hello.Greeting", "handlers.hello.Greeting"}},
	}
	for _, tt := range tests {
		for _, n := range tt.has {
			if !slices.Contains(tt.names, n) {
				t.Errorf("%s lacks %q: %v", tt.list, n, tt.names)
			}
		}
		for _, n := range tt.not {
			if slices.Contains(tt.names, n) {
				t.Errorf("%s holds %q, a name of the other kind", tt.list, n)
			}
		}
		if !slices.IsSorted(tt.names) {
			t.Errorf("%s is not sorted: %v", tt.list, tt.names)
		}
	}
}

// TestPythonConsoleNamesSayWhatToDo: the reference's message-driven console
// listeners (handlers/console.py, in its older organism.yaml) are refused
// with ErrBuiltinConsole, telling the user to use xmlpipe console, not as
// unknown names followed by the whole catalog.
func TestPythonConsoleNamesSayWhatToDo(t *testing.T) {
	c := Builtin()
	greeting, err := c.PayloadType("hello.Greeting")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		lookup func(name string) error
		value  string
	}{
		{"payload", func(n string) error { _, err := c.PayloadType(n); return err }, "handlers.console.ConsolePrompt"},
		{"payload colon form", func(n string) error { _, err := c.PayloadType(n); return err }, "handlers.console:ConsoleInput"},
		{"handler", func(n string) error { _, err := c.Handler(n, greeting, Env{}); return err }, "handlers.console.handle_console_input"},
		{"response", func(n string) error { _, err := c.Response(n); return err }, "handlers.console.handle_console_prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.lookup(tt.value)
			if !errors.Is(err, ErrBuiltinConsole) {
				t.Fatalf("err = %v, want ErrBuiltinConsole", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "xmlpipe console") || !strings.Contains(msg, tt.value) || strings.Contains(msg, "known:") {
				t.Errorf("err = %q, want it to name %q and xmlpipe console, without the catalog", msg, tt.value)
			}
		})
	}
}
