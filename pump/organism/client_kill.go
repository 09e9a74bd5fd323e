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

// ErrConversationEnded: the conversation has nothing in flight — it
// completed, failed or was killed, and a kill would stop nothing (the
// pump's sentinel).
var ErrConversationEnded = pump.ErrConversationEnded

// ErrConversationKilled: the message continues a conversation that was
// killed; a kill is final, and a new conversation must be begun (the
// pump's sentinel). Sender.Send's error wraps it.
var ErrConversationKilled = pump.ErrConversationKilled

// Killer is an optional Backend capability: stopping a conversation for
// good (/kill), as POST /api/v1/threads/{id}/kill does. Kill's error wraps
// ErrUnknownThread when the organism never knew the thread,
// ErrConversationEnded when its conversation has ended (nothing changed;
// one that completed may still be continued, one killed never), ErrForbidden when the user's role may not kill.
type Killer interface {
	// Kill stops the conversation thread belongs to (its id or the id of
	// any of its threads) and returns the conversation's id.
	Kill(ctx context.Context, thread string) (conv string, err error)
}

// Kill implements Killer: the operator at the terminal may kill any
// conversation.
func (l *Local) Kill(_ context.Context, thread string) (string, error) {
	conv, err := l.org.Pump.Kill(thread)
	if err != nil && !errors.Is(err, ErrUnknownThread) && !errors.Is(err, ErrConversationEnded) {
		return "", fmt.Errorf("kill %s: %w", thread, err)
	}
	return conv, err
}
