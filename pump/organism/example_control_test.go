package organism_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Stopping work from Go. Governance().HaltListener holds a listener's
// messages — they wait, nothing is lost — until ResumeListener (the
// organism records who did it, aborts the listener's model requests and,
// when durable, keeps the halt across a restart). OnConversation tells an
// Ask's conversation id while the Ask waits: Pump.Cancel stops its answer
// (the Ask returns xmlpipe.ErrCancelled; the conversation may be
// continued), Pump.Kill ends it for good (xmlpipe.ErrConversationKilled).
func ExampleOnConversation() {
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

	if _, err := o.Governance().HaltListener("ops", "reverser"); err != nil {
		fmt.Println(err)
		return
	}
	ids := make(chan string, 1)
	asked := make(chan error, 1)
	go func() {
		_, err := o.Ask(ctx, "reverser", &Reverse{Text: "held"},
			organism.OnConversation(func(conv string) { ids <- conv }))
		asked <- err
	}()
	conv := <-ids // the message waits at the halted reverser
	if _, err := o.Pump.Cancel(conv); err != nil {
		fmt.Println(err)
		return
	}
	err = <-asked
	fmt.Println("cancelled:", errors.Is(err, xmlpipe.ErrCancelled))

	o.Governance().ResumeListener("ops", "reverser")
	answer, err := o.Ask(ctx, "reverser", &Reverse{Text: "resumed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer.Payload.(*Reversed).Text)
	// Output:
	// cancelled: true
	// demuser
}

// Job is what the worker takes.
type Job struct{ N int }

// JobDone is its answer.
type JobDone struct{ N int }

// An organism with no room for a message refuses it at once instead of
// letting it queue without bound: the Ask's error matches pump.ErrBusy and
// is a *pump.BusyError saying what was full and when to try again
// (RetryAfter). Here max_in_flight is 8, so one listener's backlog may
// hold one message (an eighth), and admit_wait is 0: a refused message
// does not wait for room.
func ExampleOrganism_Ask_busy() {
	release := make(chan struct{})
	worker := organism.Func("worker", "Works slowly", func(ctx context.Context, j *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		select {
		case <-release:
			return xmlpipe.Respond(&JobDone{N: j.N}), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	cfg := config.Default()
	cfg.MaxInFlight = 8
	cfg.AdmitWait = 0
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler), Listeners: []organism.Listener{worker}})
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

	accepted := make(chan string, 1)
	first := make(chan error, 1)
	go func() {
		_, err := o.Ask(ctx, "worker", &Job{N: 1}, organism.OnConversation(func(c string) { accepted <- c }))
		first <- err
	}()
	<-accepted // the worker's share of the budget is taken

	_, err = o.Ask(ctx, "worker", &Job{N: 2})
	var busy *pump.BusyError
	if errors.As(err, &busy) {
		fmt.Println(errors.Is(err, pump.ErrBusy), busy.Reason, "- retry after", busy.RetryAfter)
	}
	fmt.Println(err)
	close(release)
	fmt.Println("first:", <-first)
	// Output:
	// true listener worker busy - retry after 1s
	// pump: busy: listener worker busy; retry in 1s
	// first: <nil>
}

// Up is what the upper-caser takes.
type Up struct{ Text string }

// Reloading from Go: Reload puts a changed configuration in force as a
// diff — new listeners start, changed ones are replaced, the others are
// left alone, running conversations finish on the routes they began on. A
// configuration that cannot be applied is refused (ErrReloadRefused, with
// file:line) and nothing changes.
func ExampleOrganism_Reload() {
	cat := catalog.Builtin()
	if err := catalog.Register(cat, "demo.Reverse", reverse); err != nil {
		fmt.Println(err)
		return
	}
	if err := catalog.Register(cat, "demo.Up", func(_ context.Context, u *Up, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Reversed{Text: strings.ToUpper(u.Text)}), nil
	}); err != nil {
		fmt.Println(err)
		return
	}
	const v1 = `
organism: {name: demo}
listeners:
  - name: reverser
    payload_class: demo.Reverse
    handler: demo.Reverse
    description: Reverses text
`
	cfg, err := config.Parse("organism.yaml", []byte(v1))
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

	v2, err := config.Parse("organism.yaml", []byte(v1+`
  - name: upper
    payload_class: demo.Up
    handler: demo.Up
    description: Upper-cases text
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := o.Reload(v2) // config.Load(path) reads a changed file again
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("added:", report.Added, "unchanged:", report.Unchanged)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := o.Ask(ctx, "upper", &Up{Text: "reloaded"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer.Payload.(*Reversed).Text)

	renamed, err := config.Parse("organism.yaml", []byte(strings.Replace(v1, "name: demo", "name: other", 1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = o.Reload(renamed)
	fmt.Println(errors.Is(err, organism.ErrReloadRefused), err)
	// Output:
	// added: [upper] unchanged: 1
	// RELOADED
	// true reload refused: organism.yaml:2: organism.name changed: it applies only at the next start of the organism
}

// Order is what the shop takes; Stock what it asks the stock keeper.
type Order struct{ Item string }

// Stock asks the stock keeper for an item.
type Stock struct{ Item string }

// ErrOutOfStock is the stock keeper's own error.
var ErrOutOfStock = errors.New("out of stock")

// A failure deep in a conversation reaches the Go caller matchable: the
// shop (a plain handler, which cannot hear of errors) calls the stock
// keeper, whose handler fails; the failure travels up to the Ask as a
// *pump.AskError, through a *pump.RelayedError naming who called whom,
// and errors.Is finds the handler's own error — or the pump's sentinels
// (xmlpipe.ErrHandlerTimeout for a handler past its Timeout,
// failure.ErrNoRoute for a Send to a name no listener has).
func ExampleOrganism_Ask_failed() {
	shop := organism.Func("shop", "Takes orders", func(_ context.Context, o *Order, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Send("stock", &Stock{Item: o.Item}), nil
	})
	stock := organism.Func("stock", "Keeps stock", func(_ context.Context, s *Stock, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, fmt.Errorf("%s: %w", s.Item, ErrOutOfStock)
	})
	o, err := organism.New(nil, organism.Options{Logger: slog.New(slog.DiscardHandler), Listeners: []organism.Listener{shop, stock}})
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

	_, err = o.Ask(ctx, "shop", &Order{Item: "tea"})
	var relayed *pump.RelayedError
	if errors.As(err, &relayed) {
		fmt.Printf("%s's call to %s failed\n", relayed.Listener, relayed.At)
	}
	fmt.Println(errors.Is(err, ErrOutOfStock))
	fmt.Println(err)
	// Output:
	// shop's call to stock failed
	// true
	// pump: shop's call to stock failed: Message could not be processed: handler: handler failed: stock: tea: out of stock
}
