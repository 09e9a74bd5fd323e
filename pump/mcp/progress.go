package mcp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressQueue bounds the progress notifications of one call waiting to
// be written; past it the newest are dropped.
const progressQueue = 64

// progressFlush bounds how long a call's answer waits for its progress
// notifications still queued to be written, so that they come before it;
// a client that takes none for that long gets the answer without them.
const progressFlush = 2 * time.Second

// progressSender writes one call's progress notifications from a goroutine
// of its own: an agent that writes interim text hands it over and goes on
// at once, so a client that is slow to take them (or has stopped reading
// its stream: a write to it does not heed a context) never stalls the work
// of the call, nor the agent's other conversations. The work is the call's;
// its progress is best effort.
type progressSender struct {
	notes   chan string
	done    chan struct{} // closed when the writer has returned
	quit    chan struct{} // closed to drop what is still queued
	log     *slog.Logger
	mu      sync.Mutex
	ended   bool
	dropped int
}

// progressOf returns what hands a call's interim text to its client as
// progress notifications — each a step further, the text its message — and
// what to call before the call's answer (it waits progressFlush at most
// for the notifications queued). send is nil when the request carries no
// progressToken (the client asked for none).
func progressOf(ctx context.Context, req *sdk.CallToolRequest, log *slog.Logger) (send func(text string), flush func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil, func() {}
	}
	p := &progressSender{notes: make(chan string, progressQueue), done: make(chan struct{}),
		quit: make(chan struct{}), log: log}
	go p.write(ctx, req.Session, token)
	return p.send, p.flush
}

// send queues text; when the queue is full (the client takes none) it is
// dropped and counted.
func (p *progressSender) send(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	select {
	case p.notes <- text:
	default:
		p.dropped++
	}
}

// write sends the queued notifications in order until flush closes the
// queue, dropping the rest once quit is closed. A notification the client
// cannot take is dropped: the call goes on.
func (p *progressSender) write(ctx context.Context, ss *sdk.ServerSession, token any) {
	defer close(p.done)
	step := 0.0
	for text := range p.notes {
		select {
		case <-p.quit:
			continue // the answer went without it
		default:
		}
		step++
		_ = ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Message: text, Progress: step})
	}
}

// flush closes the queue and waits, progressFlush at most, for what it
// holds to be written; what is not by then is dropped.
func (p *progressSender) flush() {
	p.mu.Lock()
	if !p.ended {
		p.ended = true
		close(p.notes)
	}
	dropped := p.dropped
	p.mu.Unlock()
	t := time.NewTimer(progressFlush)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		close(p.quit)
		p.log.Info("mcp: the client takes no progress notification; the answer goes without the rest")
	}
	if dropped > 0 {
		p.log.Info("mcp: progress notifications dropped: the client took none for a while", "dropped", dropped)
	}
}
