package organism_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Title is what the editor takes: a headline from the outside, or — as
// the titler's answer — the same headline in title case.
type Title struct{ Text string }

// TitleCase is what the titler takes.
type TitleCase struct{ Text string }

// Edited is the editor's answer to its caller.
type Edited struct{ Text string }

// editor calls the titler and answers its own caller once the titler has
// answered. A handler never blocks on another listener: it sends with a
// correlation ref and returns, and the answer arrives as a new call whose
// Metadata.InReplyTo is that ref — in the editor's own payload type, the
// one the titler answers with. A failure of the call (the titler's error,
// its timeout, a panic) arrives at HandleError with the same ref.
type editor struct{}

func (editor) Handle(_ context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	t := payload.(*Title)
	if md.InReplyTo == "title" {
		return xmlpipe.Respond(&Edited{Text: t.Text}), nil
	}
	return xmlpipe.SendRef("titler", &TitleCase{Text: t.Text}, "title"), nil
}

func (editor) HandleError(_ context.Context, e *xmlpipe.DeliveryError, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	return xmlpipe.Respond(&Edited{Text: "call " + md.InReplyTo + " failed: " + e.Detail}), nil
}

// titler answers its caller with Respond, in the caller's payload type; it
// honours its context, which its Timeout cancels.
func titler(ctx context.Context, p *TitleCase, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
	if p.Text == "" {
		<-ctx.Done() // a handler that waits must give up when told to
		return nil, context.Cause(ctx)
	}
	words := strings.Fields(p.Text)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return xmlpipe.Respond(&Title{Text: strings.Join(words, " ")}), nil
}

// A listener that calls another one and answers with its result: the
// editor sends to the titler with a correlation ref, and its handler runs
// again with the titler's answer; the titler's deadline (Timeout) turns a
// call that hangs into a failure the editor hears about.
func Example_call() {
	t := organism.Func("titler", "Title-cases a headline", titler)
	t.Timeout = 100 * time.Millisecond
	o, err := organism.New(nil, organism.Options{
		Logger: slog.New(slog.DiscardHandler),
		Listeners: []organism.Listener{t,
			{Name: "editor", Description: "Edits headlines", Payload: reflect.TypeFor[Title](), Handler: editor{}}},
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
	for _, headline := range []string{"go is fun", ""} {
		answer, err := o.Ask(ctx, "editor", &Title{Text: headline})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(answer.Payload.(*Edited).Text)
	}
	// Output:
	// Go Is Fun
	// call title failed: handler failed: listener titler: handler timeout 100ms
}
