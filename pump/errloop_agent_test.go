package pump_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestAgentErrorHandlerLoopBounded: a hand-written agent (Agent: true, a Go
// handler, no max_iterations) whose error handler always sends what is
// refused again hears its own refusal pump.MaxErrorHandlerRetries times in a
// row, no more: the next refusal is a dead letter saying so, and the
// conversation ends.
func TestAgentErrorHandlerLoopBounded(t *testing.T) {
	tests := []struct {
		name string
		// out is what both the handler and its error handler answer.
		out func() xmlpipe.Response
		// peers are the agent's peers.
		peers []string
		// opts are the pump's options.
		opts pump.Options
	}{
		{"send to an unknown name", func() xmlpipe.Response { return xmlpipe.Send("nobody", &Pong{Text: "again"}) },
			[]string{"nobody"}, pump.Options{}},
		{"raw output of no known tag", func() xmlpipe.Response { return xmlpipe.Raw([]byte(`<Unknown>again</Unknown>`)) },
			[]string{"nobody"}, pump.Options{}},
		{"send to a name not among its peers", func() xmlpipe.Response { return xmlpipe.Send("other", &Pong{Text: "again"}) },
			nil, pump.Options{}},
		{"raw output holding no XML element", func() xmlpipe.Response { return xmlpipe.Raw([]byte(`just prose, again`)) },
			nil, pump.Options{}},
		{"raw output of too many messages", func() xmlpipe.Response {
			return xmlpipe.Raw([]byte(`<Pong><Text>a</Text></Pong><Pong><Text>b</Text></Pong>`))
		}, []string{"bot"}, pump.Options{MaxMessagesPerTurn: 1}},
	}
	const runaway = 50 // the error handler gives up here, so a failing test ends

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var heard atomic.Int64
			bot := agent(withErrorHandler(
				listenerOf(t, "bot", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
					return tt.out(), nil
				}),
				func(context.Context, *xmlpipe.DeliveryError, xmlpipe.Metadata) (xmlpipe.Response, error) {
					if heard.Add(1) >= runaway {
						return nil, nil
					}
					return tt.out(), nil
				}), tt.peers...)
			p := startPump(t, tt.opts, bot)
			events := newRecorder()
			p.Subscribe(events)
			out := newRecorder()
			mustSend(t, p, client, "bot", &Ping{Text: "x"}, out)
			out.waitFor(t, "the conversation's end", kind(pump.EventComplete))
			if got, want := heard.Load(), int64(pump.MaxErrorHandlerRetries)+1; got != want {
				t.Errorf("the agent's error handler heard %d refusals, want %d (one, then %d retries)", got, want,
					pump.MaxErrorHandlerRetries)
			}
			dl := events.waitFor(t, "a dead letter", kind(pump.EventDeadLetter))
			if !strings.Contains(dl.Error, "refused") || !strings.Contains(dl.Error, "in a row") {
				t.Errorf("dead letter reason %q, want it to say the error handler's output was refused in a row", dl.Error)
			}
		})
	}
}
