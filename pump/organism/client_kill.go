package organism

import (
	"context"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// ErrUnknownThread: no live conversation has that thread (the pump's
// sentinel, so a client can test for it without importing the pump).
var ErrUnknownThread = pump.ErrUnknownThread

// Killer is an optional Backend capability: stopping a conversation for
// good (/kill), as POST /api/v1/threads/{id}/kill does. Kill's error wraps
// ErrUnknownThread when the thread is not live, ErrForbidden when the
// user's role may not kill.
type Killer interface {
	// Kill stops the conversation thread belongs to (its id or the id of
	// any of its threads) and returns the conversation's id.
	Kill(ctx context.Context, thread string) (conv string, err error)
}

// Kill implements Killer: the operator at the terminal may kill any
// conversation.
func (l *Local) Kill(_ context.Context, thread string) (string, error) {
	conv, err := l.org.Pump.Kill(thread)
	if err != nil && !errors.Is(err, ErrUnknownThread) {
		return "", fmt.Errorf("kill %s: %w", thread, err)
	}
	return conv, err
}
