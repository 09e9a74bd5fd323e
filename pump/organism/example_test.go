package organism_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Reverse asks for a text reversed.
type Reverse struct {
	Text string `doc:"the text to reverse"`
}

// Reversed is the answer.
type Reversed struct {
	Text string
}

// reverse is the handler: it answers the caller with the text reversed.
func reverse(_ context.Context, p *Reverse, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	r := []rune(p.Text)
	slices.Reverse(r)
	return xmlpipe.Respond(&Reversed{Text: string(r)}), nil
}

// An organism built in code: no configuration file (nil: the defaults),
// one listener written in Go, one message and its answer.
func Example() {
	o, err := organism.New(nil, organism.Options{
		Logger:    slog.New(slog.DiscardHandler),
		Listeners: []organism.Listener{organism.Func("reverser", "Reverses text", reverse)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := o.Ask(ctx, "reverser", &Reverse{Text: "Hello, world"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer.From+":", answer.Payload.(*Reversed).Text)
	// Output: reverser: dlrow ,olleH
}

// An organism from YAML: the listener's payload type and handler are
// registered in the catalog under a name the configuration uses.
func Example_yaml() {
	cat := catalog.Builtin()
	if err := catalog.Register(cat, "demo.Reverse", reverse); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := config.Parse("organism.yaml", []byte(`
organism: {name: demo}
listeners:
  - name: reverser
    payload_class: demo.Reverse
    handler: demo.Reverse
    description: Reverses text
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	o, err := organism.New(cfg, organism.Options{Catalog: cat, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := o.Ask(ctx, "reverser", &Reverse{Text: "stressed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer.Payload.(*Reversed).Text)
	// Output: desserts
}

// The organism's client facade: Assemble builds the organism with its
// output wired to a Local backend, through which a client (the line
// console, a bus session) sends messages, as "console", and hears what
// comes back to it.
func ExampleAssemble() {
	l, err := organism.Assemble(organism.Options{
		Logger:    slog.New(slog.DiscardHandler),
		Listeners: []organism.Listener{organism.Func("reverser", "Reverses text", reverse)},
	}, func(opts organism.Options) (*organism.Organism, error) { return organism.New(nil, opts) })
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := l.Organism().Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer l.Organism().Shutdown(context.Background())
	out := make(chan organism.Output, 16)
	defer l.Subscribe(func(o organism.Output) { out <- o })()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv, err := l.Send(ctx, organism.Message{Target: "reverser", Text: "Hello, world"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		select {
		case o := <-out:
			switch {
			case o.Conversation != conv:
			case o.Kind == organism.OutputReply:
				fmt.Printf("[%s] %s\n", o.From, o.Text)
			case o.Kind == organism.OutputComplete:
				fmt.Println("complete")
				return
			}
		case <-ctx.Done():
			fmt.Println("no answer")
			return
		}
	}
	// Output:
	// [reverser] dlrow ,olleH
	// complete
}

// Asking a listener by text, as the console's "@greeter Dan" does: the
// hello-world greeter (an agent; without a model it answers with a
// template greeting) greets, the shouter shouts, and the conversation's
// last message carries the shout.
func ExampleOrganism_AskText() {
	o, err := organism.Load("../../organism.yaml", organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := o.AskText(ctx, "greeter", "Dan")
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := organism.PayloadText(answer.Payload)
	fmt.Println(answer.From+":", text)
	if _, err := o.AskText(ctx, "nobody", "Dan"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// shouter: HELLO, DAN!
	// unknown listener: nobody
}

// Note is a line of a conversation with the note-taker.
type Note struct{ Text string }

// Notes is the note-taker's answer: every note of the conversation so far.
type Notes struct{ Text string }

// Continuing a conversation: Continue sends on the conversation of an
// earlier answer, so the listener's handler sees the same thread (and an
// agent the conversation's history); Ask would begin a new one.
func ExampleOrganism_Continue() {
	var mu sync.Mutex
	notes := map[string][]string{} // by conversation thread
	take := func(_ context.Context, n *Note, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		notes[md.ThreadID] = append(notes[md.ThreadID], n.Text)
		return xmlpipe.Respond(&Notes{Text: strings.Join(notes[md.ThreadID], ", ")}), nil
	}
	o, err := organism.New(nil, organism.Options{
		Logger:    slog.New(slog.DiscardHandler),
		Listeners: []organism.Listener{organism.Func("notes", "Takes notes", take)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer o.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := o.Ask(ctx, "notes", &Note{Text: "milk"})
	if err != nil {
		fmt.Println(err)
		return
	}
	next, err := o.Continue(ctx, first.Conversation, "notes", &Note{Text: "eggs"})
	if err != nil {
		fmt.Println(err)
		return
	}
	other, err := o.Ask(ctx, "notes", &Note{Text: "tea"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(first.Payload.(*Notes).Text)
	fmt.Println(next.Payload.(*Notes).Text, next.Conversation == first.Conversation)
	fmt.Println(other.Payload.(*Notes).Text)
	// Output:
	// milk
	// milk, eggs true
	// tea
}
