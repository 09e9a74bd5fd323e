package organism

import (
	"context"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// CancelledReason is the Text of the OutputComplete of a conversation whose
// answer was cancelled (Canceller): no answer comes, and the conversation
// goes on (the pump's constant).
const CancelledReason = pump.CancelledReason

// Canceller is an optional Backend capability: stopping the answer in
// flight of a conversation and keeping the conversation (/cancel, a
// console's Ctrl-C), as POST /api/v1/threads/{id}/cancel does. Cancel's
// error wraps ErrUnknownThread when the organism never knew the thread,
// ErrConversationEnded when nothing of it is in flight (it completed or
// was killed: nothing to cancel), ErrForbidden when the user's role may
// not cancel it.
type Canceller interface {
	// Cancel stops the answer in flight of the conversation thread belongs
	// to (its id or the id of any of its threads) and returns the
	// conversation's id.
	Cancel(ctx context.Context, thread string) (conv string, err error)
}

// Cancel implements Canceller: the operator at the terminal may cancel any
// conversation's answer.
func (l *Local) Cancel(_ context.Context, thread string) (string, error) {
	conv, err := l.org.Pump.Cancel(thread)
	if err != nil && !errors.Is(err, ErrUnknownThread) && !errors.Is(err, ErrConversationEnded) {
		return "", fmt.Errorf("cancel %s: %w", thread, err)
	}
	return conv, err
}
