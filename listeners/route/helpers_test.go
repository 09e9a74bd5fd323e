package route

import (
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
)

// shipped returns the capabilities of the hello-world listeners plus every
// native tool, as the organism indexes them.
func shipped(t testing.TB) []Capability {
	t.Helper()
	cat := catalog.Builtin()
	var out []Capability
	for _, l := range []struct{ name, class, desc string }{
		{"greeter", "handlers.hello.Greeting", "Greeting agent - forwards to shouter"},
		{"shouter", "handlers.hello.GreetingResponse", "Shouts the greeting in ALL CAPS"},
		{"response-handler", "handlers.hello.ShoutedResponse", "Prints responses to console"},
	} {
		pt, err := cat.PayloadType(l.class)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Capability{Name: l.name, Description: l.desc, Payload: pt})
	}
	for _, name := range cat.ToolNames() {
		tool, _ := cat.Tool(name)
		pt, err := cat.PayloadType(tool.PayloadClass)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Capability{Name: tool.Name, Description: tool.Description, Payload: pt})
	}
	return out
}
