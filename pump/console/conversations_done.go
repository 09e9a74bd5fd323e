package console

import (
	"context"
	"time"
)

// cancelSettle bounds how long a cancel waits for its conversation to
// complete (its handlers to return) before it says the conversation goes
// on: it completes as soon as they do, within milliseconds.
const cancelSettle = 10 * time.Second

// whenCompleted returns a channel closed once conv is not running: at once
// when it is not, else when its completion is seen (completed).
func (cs *conversations) whenCompleted(conv string) <-chan struct{} {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ch := make(chan struct{})
	if !cs.running[conv] {
		close(ch)
		return ch
	}
	cs.done[conv] = append(cs.done[conv], ch)
	return ch
}

// settled waits until conv is not running, ctx is done or cancelSettle has
// passed, and reports whether conv is not running.
func (cs *conversations) settled(ctx context.Context, conv string) bool {
	t := time.NewTimer(cancelSettle)
	defer t.Stop()
	select {
	case <-cs.whenCompleted(conv):
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return !cs.isRunning(conv)
}

// settleAll waits until none of convs is running, ctx is done or grace
// has passed.
func (cs *conversations) settleAll(ctx context.Context, convs []string, grace time.Duration) {
	if len(convs) == 0 {
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	for _, conv := range convs {
		select {
		case <-cs.whenCompleted(conv):
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}
