package organism

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestCallableRootCollisionPosition: a callable.root that another
// listener's payload already has is refused at the callable.root line,
// where the fix is, not at the callable listener's own line.
func TestCallableRootCollisionPosition(t *testing.T) {
	cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: cr}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
    callable:
      root: Greeting
      description: Evaluates an arithmetic expression
      parameters:
        - {name: Expression, required: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = New(cfg, Options{Logger: slog.New(slog.DiscardHandler)}); err == nil {
		t.Fatal("a callable.root another listener handles was accepted")
	}
	if !errors.Is(err, pump.ErrTagCollision) || !strings.HasPrefix(err.Error(), "organism.yaml:12: listener calculate: ") {
		t.Errorf("error %q, want a root tag collision at organism.yaml:12 (callable.root)", err)
	}
}
