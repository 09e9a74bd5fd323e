package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// calcCallableYAML is an organism whose calculate listener (payload
// <Calculate><Expression/></Calculate>) is callable with params (a YAML
// flow sequence of parameters); the parameters list begins on line 9.
func calcCallableYAML(params string) string {
	return `organism: {name: callee}
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
    callable:
      description: Evaluates an arithmetic expression
      parameters:
` + params
}

// TestCallableParametersCheckedAtLoad: a callable listener that is not an
// agent is called with its own payload, the arguments as its children, so
// parameters its payload does not take would make every call fail at its
// schema. The load refuses them with file:line, naming the parameter (and
// the element meant, when only the case differs); a reload does the same
// and keeps the running organism.
func TestCallableParametersCheckedAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name, params, want string
		line               int
	}{
		{name: "unknown element", params: "        - {name: Expr, required: true}\n", line: 10,
			want: "Calculate has no element Expr (its elements: Expression)"},
		{name: "case differs", params: "        - {name: expression, required: true}\n", line: 10,
			want: "did you mean Expression?"},
		{name: "second parameter unknown", line: 11,
			params: "        - {name: Expression, required: true}\n        - {name: Precision, type: integer}\n",
			want:   "Calculate has no element Precision"},
		{name: "required element optional", params: "        - {name: Expression}\n", line: 10,
			want: "Calculate requires the element Expression: the parameter must be required: true"},
		{name: "required element missing", params: "        []\n", line: 9,
			want: "Calculate requires the element Expression, which no parameter gives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := New(parseIn(t, dir, calcCallableYAML(tc.params)), Options{Logger: slog.New(slog.DiscardHandler)})
			if !errors.Is(err, ErrCallParameter) {
				t.Fatalf("load: %v, want %v", err, ErrCallParameter)
			}
			at := fmt.Sprintf("%s:%d: listener calculate: ", filepath.Join(dir, "organism.yaml"), tc.line)
			if !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("load error %q, want it at %q saying %q", err, at, tc.want)
			}
		})
	}

	t.Run("reload", func(t *testing.T) {
		path := writeOrganism(t, calcCallableYAML("        - {name: Expression, required: true}\n"))
		o, err := Load(path, quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := o.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		_, err = o.Reload(parseIn(t, filepath.Dir(path), calcCallableYAML("        - {name: Expr, required: true}\n")))
		if !errors.Is(err, ErrCallParameter) || !strings.Contains(err.Error(), path+":10:") {
			t.Fatalf("reload: %v, want %v at line 10", err, ErrCallParameter)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ev, err := o.Pump.AskXML(ctx, "peer", "calculate.call",
			[]byte(`<CalculateCall xmlns=""><Expression>6*7</Expression></CalculateCall>`))
		if err != nil || !strings.Contains(fmt.Sprintf("%+v", ev.Payload), "42") {
			t.Fatalf("after a refused reload the call answered %+v, %v; want 42", ev.Payload, err)
		}
	})
}

// TestCallableArgumentsInSchemaOrder: a call's arguments reach the
// listener in the order its payload's schema takes them, whatever order the
// parameters were declared in.
func TestCallableArgumentsInSchemaOrder(t *testing.T) {
	o := startOrganism(t, `organism: {name: callee}
listeners:
  - name: greeter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
    callable:
      description: Shouts a greeting
      parameters:
        - {name: OriginalSender, required: true}
        - {name: Message, required: true}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan pump.Event, 1)
	o.Pump.Watch(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "greeter" {
			select {
			case done <- e:
			default:
			}
		}
	}))
	// The shouted greeting goes to x, which does not exist: the call
	// fails after the callee handled its task, which is all this tests.
	_, err := o.Pump.AskXML(ctx, "peer", "greeter.call",
		[]byte(`<GreeterCall xmlns=""><OriginalSender>x</OriginalSender><Message>hi</Message></GreeterCall>`))
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("the callee never got the call's task: %v", err)
	}
}
