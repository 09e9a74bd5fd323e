package organism_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// embedTimeout bounds every wait; passing tests never reach it.
const embedTimeout = 30 * time.Second

// Polite is the payload of the polite listener, which hands a greeting to
// the hello-world's shouter.
type Polite struct {
	Name string
}

func polite(_ context.Context, p *Polite, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	if md.From != organism.AskFrom {
		return nil, errors.New("polite: asked by " + md.From)
	}
	return xmlpipe.Send("shouter", &hello.GreetingResponse{Message: "Good day, " + p.Name,
		OriginalSender: "response-handler"}), nil
}

// startEmbedded assembles and starts an organism, shut down when the test ends.
func startEmbedded(t *testing.T, cfg *config.Organism, opts organism.Options) *organism.Organism {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	o, err := organism.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), embedTimeout)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return o
}

func ask(t *testing.T, o *organism.Organism, to string, payload any) (pump.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), embedTimeout)
	defer cancel()
	return o.Ask(ctx, to, payload)
}

// Go listeners sit beside the configured ones: one forwards into the
// hello-world chain, whose last message is the answer; the organism's
// journal (a data directory) holds the conversation by the time Ask
// returns.
func TestGoListenersBesideYAML(t *testing.T) {
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := startEmbedded(t, cfg, organism.Options{DataDir: t.TempDir(), Listeners: []organism.Listener{
		organism.Func("polite", "Greets politely, loudly", polite),
		organism.Func("reverser", "Reverses text", reverse),
	}})
	ev, err := ask(t, o, "polite", &Polite{Name: "Ada"})
	if err != nil {
		t.Fatalf("Ask polite: %v", err)
	}
	if s, ok := ev.Payload.(*hello.ShoutedResponse); ev.Kind != pump.EventMessage || ev.Listener != "response-handler" ||
		!ok || s.Message != "GOOD DAY, ADA" {
		t.Errorf("answer = %s to %s: %#v; want the shouted greeting to response-handler", ev.Kind, ev.Listener, ev.Payload)
	}
	entries, err := o.Store().Conversation(ev.Conversation)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 3 {
		t.Errorf("journal holds %d entries of the conversation, want its 3 messages", len(entries))
	}
	ev, err = ask(t, o, "reverser", &Reverse{Text: "abc"})
	if err != nil || ev.Kind != pump.EventReply || ev.Payload.(*Reversed).Text != "cba" {
		t.Errorf("Ask reverser = %+v, %v; want the reply cba", ev, err)
	}
	// The built-in greeter still answers, through the same chain.
	ev, err = ask(t, o, "greeter", &hello.Greeting{Name: "Dan"})
	if err != nil || ev.Payload.(*hello.ShoutedResponse).Message != "HELLO, DAN!" {
		t.Errorf("Ask greeter = %+v, %v", ev, err)
	}
}

func TestGoListenerRefused(t *testing.T) {
	handler := xmlpipe.HandlerFunc(func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })
	tests := []struct {
		name string
		l    organism.Listener
		want string
	}{
		{"no name", organism.Listener{Description: "d", Payload: reflect.TypeFor[Reverse](), Handler: handler}, "no name"},
		// The names organism.yaml refuses (config.CheckListenerName): no
		// console line, peers list or tool call could name them.
		{"space in the name", organism.Func("my reverser", "d", reverse), "must not contain spaces or control characters"},
		{"control character in the name", organism.Func("rev\nerser", "d", reverse),
			"must not contain spaces or control characters"},
		{"no description", organism.Listener{Name: "x", Payload: reflect.TypeFor[Reverse](), Handler: handler}, "no description"},
		{"no handler", organism.Func[Reverse]("x", "d", nil), "no handler"},
		{"no payload", organism.Listener{Name: "x", Description: "d", Handler: handler}, "not a struct"},
		{"pointer payload", organism.Listener{Name: "x", Description: "d", Payload: reflect.TypeFor[*Reverse](), Handler: handler},
			"not a struct"},
		{"unsupported field", organism.Func("x", "d", func(context.Context, *struct{ C chan int }, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, nil
		}), "Options.Listeners[0]"},
		// Both names, and the line of the entry it collides with.
		{"name of a configured listener", organism.Func("Greeter", "d", reverse),
			`Options.Listeners[0]: listener Greeter: duplicate listener name: already registered as "greeter" by the entry at ../../organism.yaml:35`},
		{"negative workers", organism.Listener{Name: "x", Description: "d", Payload: reflect.TypeFor[Reverse](), Handler: handler,
			Workers: -1}, "workers must not be negative"},
		{"handler of another payload type", organism.Listener{Name: "x", Description: "d", Payload: reflect.TypeFor[Reversed](),
			Handler: xmlpipe.Typed(reverse)}, "its handler takes *organism_test.Reverse"},
	}
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler),
				Listeners: []organism.Listener{tt.l}})
			if err == nil {
				_ = o.Shutdown(t.Context())
				t.Fatal("New accepted the listener")
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.want)) {
				t.Errorf("error = %v, want it to name %q", err, tt.want)
			}
		})
	}
}

// A reload leaves the Go listeners alone, and refuses a configuration that
// names one of them.
func TestGoListenerSurvivesReload(t *testing.T) {
	o := startEmbedded(t, nil, organism.Options{Listeners: []organism.Listener{
		organism.Func("reverser", "Reverses text", reverse)}})
	next, err := config.Parse("organism.yaml", []byte(`
listeners:
  - name: shouter
    payload_class: hello.GreetingResponse
    handler: hello.Shout
    description: Shouts
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Reload(next); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if ev, err := ask(t, o, "reverser", &Reverse{Text: "ab"}); err != nil || ev.Payload.(*Reversed).Text != "ba" {
		t.Errorf("after the reload Ask reverser = %+v, %v", ev, err)
	}
	clash, err := config.Parse("organism.yaml", []byte(`
listeners:
  - name: reverser
    payload_class: hello.GreetingResponse
    handler: hello.Shout
    description: Shouts
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Reload(clash); !errors.Is(err, organism.ErrReloadRefused) {
		t.Errorf("Reload naming the Go listener = %v, want ErrReloadRefused", err)
	}
}

// Ask's failures: a listener that fails, one that does not exist, one that
// ends the conversation without an answer.
func TestAskFailures(t *testing.T) {
	o := startEmbedded(t, nil, organism.Options{Listeners: []organism.Listener{
		organism.Func("failing", "Fails", func(context.Context, *Reverse, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, errors.New("no")
		}),
		organism.Func("silent", "Answers nothing", func(context.Context, *Polite, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, nil
		}),
	}})
	if _, err := ask(t, o, "failing", &Reverse{Text: "x"}); err == nil {
		t.Error("Ask failing succeeded")
	} else if e, ok := errors.AsType[*pump.AskError](err); !ok || e.Event.Kind != pump.EventHuh {
		t.Errorf("Ask failing = %v, want a *pump.AskError with a <huh>", err)
	}
	if _, err := ask(t, o, "nobody", &Reverse{Text: "x"}); err == nil {
		t.Error("Ask nobody succeeded")
	} else if _, ok := errors.AsType[*failure.Failure](err); !ok {
		t.Errorf("Ask nobody = %v, want a *failure.Failure", err)
	}
	if _, err := ask(t, o, "silent", &Polite{Name: "x"}); !errors.Is(err, pump.ErrNoAnswer) {
		t.Errorf("Ask silent = %v, want ErrNoAnswer", err)
	}
}
