package organism_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Slow is what the slow listener takes.
type Slow struct{ Text string }

// Stopping waiting without stopping the work. An Ask whose context ends
// kills its conversation: the question is given up. A caller that only
// wants to stop waiting — a request timeout in front of a long job —
// asks under pump.KeepOnCancel: the Ask returns the context's error (an
// *organism.AskEndedError naming the conversation) and the conversation
// runs on to its answer; Continue on it waits for that turn and asks
// again.
func Example_keepOnCancel() {
	release := make(chan struct{})
	worker := organism.Func("worker", "Works slowly", func(ctx context.Context, s *Slow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		select {
		case <-release:
			return xmlpipe.Respond(&Reversed{Text: "done: " + s.Text}), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	o, err := organism.New(nil, organism.Options{Logger: slog.New(slog.DiscardHandler), Listeners: []organism.Listener{worker}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer o.Shutdown(context.Background())

	// The caller stops waiting as soon as the job was accepted (a timeout
	// would do the same).
	wait, stop := context.WithCancel(pump.KeepOnCancel(context.Background()))
	_, err = o.Ask(wait, "worker", &Slow{Text: "first"}, organism.OnConversation(func(string) { stop() }))
	var ended *organism.AskEndedError
	if !errors.As(err, &ended) {
		fmt.Println(err)
		return
	}
	fmt.Println("stopped waiting:", errors.Is(err, context.Canceled))

	close(release) // the job, still running, completes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := o.Continue(ctx, ended.Conversation, "worker", &Slow{Text: "second"})
	if err != nil {
		fmt.Println(err) // a killed conversation would refuse it
		return
	}
	fmt.Println(answer.Payload.(*Reversed).Text)
	// Output:
	// stopped waiting: true
	// done: second
}
