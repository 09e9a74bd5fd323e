package pump_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Hello asks the greeter to greet someone.
type Hello struct {
	Name string `doc:"who to greet"`
}

// Shout is what the greeter asks the shouter to shout.
type Shout struct {
	Text string `doc:"the text to shout"`
}

// examplePump is a started pump with two listeners: greeter greets and
// forwards the greeting to shouter, which shouts it (to out) and ends the
// conversation.
func examplePump(out func(string)) (*pump.Pump, error) {
	p, err := pump.New(pump.Options{Organism: "example", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	hello, err := xmlpipe.PayloadTypeOf[Hello]()
	if err != nil {
		return nil, err
	}
	shout, err := xmlpipe.PayloadTypeOf[Shout]()
	if err != nil {
		return nil, err
	}
	greeter := pump.Listener{Name: "greeter", Description: "Greets someone", Payload: hello,
		Handler: xmlpipe.Typed(func(_ context.Context, h *Hello, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			return xmlpipe.Send("shouter", &Shout{Text: "Hello, " + h.Name + "!"}), nil
		})}
	shouter := pump.Listener{Name: "shouter", Description: "Shouts", Payload: shout,
		Handler: xmlpipe.Typed(func(_ context.Context, s *Shout, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			out(fmt.Sprintf("[%s → shouter] %s", md.From, strings.ToUpper(s.Text)))
			return nil, nil // the chain ends here
		})}
	for _, l := range []pump.Listener{greeter, shouter} {
		if err := p.Register(l); err != nil {
			return nil, err
		}
	}
	return p, p.Start()
}

// A pump with two listeners. Ask sends a message on a new conversation and
// waits until it completes; its answer is the reply to the caller when a
// listener called xmlpipe.Respond, else — as here, where the shouter ends the
// chain — the last message delivered.
func ExamplePump_Ask() {
	p, err := examplePump(func(line string) { fmt.Println(line) })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	answer, err := p.Ask(ctx, "example", "greeter", &Hello{Name: "Ada"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("answer: %s from %s to %s: %q\n", answer.Kind, answer.From, answer.Listener,
		answer.Payload.(*Shout).Text)
	// Output:
	// [greeter → shouter] HELLO, ADA!
	// answer: message from greeter to shouter: "Hello, Ada!"
}

// Inject takes a whole envelope, as a transport receives it. The pump
// validates it against the listener's schema (derived from Hello) before any
// handler sees it: a payload with a field Hello does not have is refused with
// a <huh>, which reaches the outlet given with the message.
func ExamplePump_Inject() {
	p, err := examplePump(func(line string) { fmt.Println(line) })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Shutdown(context.Background())
	huh := make(chan string, 1)
	out := pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventHuh {
			huh <- e.Error
		}
	})
	envelope := `<message xmlns="https://xml-pipeline.org/ns/envelope/v1">
	  <meta><from>example</from><to>greeter</to><thread>0b5c8a5e-8a43-4c1e-9d5e-7c8f4f1d2a6b</thread></meta>
	  <Hello xmlns=""><Nickname>Ada</Nickname></Hello>
	</message>`
	if err := p.Inject(context.Background(), []byte(envelope), out); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case text := <-huh:
		fmt.Println("<huh>:", text)
	case <-time.After(30 * time.Second):
		fmt.Println("no answer")
	}
	// Output: <huh>: Invalid payload structure
}

// SendEnvelope is how a transport, a gateway or the console hands the pump
// a message it holds as an encoded payload element: the pump builds the
// envelope around it — on a new thread here — and injects it, as the
// session's principal when As is set, returning the conversation's thread
// once the ingress stages took it.
func ExamplePump_SendEnvelope() {
	lines := make(chan string, 1)
	p, err := examplePump(func(line string) { lines <- line })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ada := &pump.Principal{From: "websocket:ada", User: "ada"}
	thread, err := p.SendEnvelope(ctx, pump.Envelope{From: ada.From, To: "greeter",
		Payload: []byte(`<Hello xmlns=""><Name>Ada</Name></Hello>`), As: ada}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("accepted on a new thread:", stage.IsThreadID(thread))
	select {
	case line := <-lines:
		fmt.Println(line)
	case <-ctx.Done():
		fmt.Println("no answer")
	}
	// Output:
	// accepted on a new thread: true
	// [greeter → shouter] HELLO, ADA!
}
