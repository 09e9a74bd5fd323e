package organism

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestStartLogsPythonPeerlessAgent: an organism whose configuration holds
// a handler agent without peers — the Python server's reading: it may send
// anywhere — starts, and logs config.Organism.Warnings' located warning,
// so a user who runs it (not only one who validates it) is told why its
// forwards are refused.
func TestStartLogsPythonPeerlessAgent(t *testing.T) {
	cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: hello-world}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Receives greeting, forwards to shouter
    agent: true
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o, err := New(cfg, Options{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	want := "organism.yaml:3: listeners[0]: agent greeter has a handler but no peers"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, buf.String())
	}
}
