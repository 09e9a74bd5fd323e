package hello

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Completer is the small LLM interface the greeter needs: one completion for an
// agent on a thread.
type Completer interface {
	Complete(ctx context.Context, agent, thread, userMessage string) (string, error)
}

// Todos is the part of the todo registry the greeter uses to watch for the
// shouted reply (python-reference §4.10).
type Todos interface {
	Register(thread, issuer, waitFor, fromListener, description string) string
	CloseRaised(thread, agent string) int
}

// Greeter is the greeter agent: it greets payload.Name and forwards the
// greeting to the shouter, asking for the shout to go to response-handler.
type Greeter struct {
	// LLM writes the greeting; nil means no backend: a template greeting.
	LLM Completer
	// Todos, when set, records a watcher for the shouted reply.
	Todos Todos
}

// TemplateGreeting is the greeting used when no LLM backend is configured.
func TemplateGreeting(name string) string { return fmt.Sprintf("Hello, %s!", name) }

// Handle implements the greeter (handle_greeting in the reference).
func (g *Greeter) Handle(ctx context.Context, p *Greeting, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	self := md.OwnName
	if self == "" {
		self = "greeter"
	}
	if g.Todos != nil {
		if md.TodoNudge != "" {
			g.Todos.CloseRaised(md.ThreadID, self)
		}
		g.Todos.Register(md.ThreadID, self, "ShoutedResponse", "shouter",
			"waiting for shouter to process greeting for "+p.Name)
	}
	text := TemplateGreeting(p.Name)
	if g.LLM != nil {
		out, err := g.LLM.Complete(ctx, self, md.ThreadID,
			fmt.Sprintf("Greet %s enthusiastically. Respond with ONLY a short greeting sentence.", p.Name))
		if err != nil {
			return nil, fmt.Errorf("greeter: LLM completion failed: %w", err)
		}
		text = strings.TrimSpace(out)
	}
	return xmlpipe.Send("shouter", &GreetingResponse{Message: text, OriginalSender: "response-handler"}), nil
}

// ErrNoOriginalSender: a GreetingResponse whose OriginalSender is empty
// names nowhere for the shouted greeting to go.
var ErrNoOriginalSender = errors.New("OriginalSender is empty: it must name the listener the shouted greeting goes to")

// Shout upper-cases the greeting and sends it where the payload says
// (handle_shout: data-driven routing); a payload that says nowhere fails
// with ErrNoOriginalSender, an *xmlpipe.InputError: its sender's client
// is told the text beside its <huh>.
func Shout(_ context.Context, p *GreetingResponse, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	if strings.TrimSpace(p.OriginalSender) == "" {
		return nil, &xmlpipe.InputError{Err: ErrNoOriginalSender}
	}
	return xmlpipe.Send(p.OriginalSender, &ShoutedResponse{Message: strings.ToUpper(p.Message)}), nil
}

// Printer is response-handler: it shows the shouted greeting and ends the chain.
type Printer struct {
	// Print receives (thread, sender, message); the console renders it as
	// "[sender] message". The thread lets a transport route the line to the
	// client whose conversation it belongs to.
	Print func(thread, from, message string)
}

// Handle implements handle_response_print.
func (pr *Printer) Handle(_ context.Context, p *ShoutedResponse, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	if pr.Print != nil {
		pr.Print(md.ThreadID, md.From, p.Message)
	}
	return nil, nil
}
