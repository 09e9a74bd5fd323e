package console

import (
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestRemoteSendOnAKilledConversation: over --connect, the bus's error
// frame of code "killed" is the error the local backend returns for a
// continuation of a killed conversation (ErrConversationKilled), so the
// console treats both alike; a "rejected" one stays a *Rejection.
func TestRemoteSendOnAKilledConversation(t *testing.T) {
	req := wire.Request{Head: wire.Head{Type: wire.TypeSend}, Target: "researcher"}
	err := requestError(req, wire.Error{Error: "Conversation was killed; start a new one", Code: wire.CodeKilled})
	if !errors.Is(err, organism.ErrConversationKilled) {
		t.Errorf("code killed: %v, want ErrConversationKilled", err)
	}
	var rej *organism.Rejection
	err = requestError(req, wire.Error{Error: "Invalid envelope", Code: wire.CodeRejected})
	if !errors.As(err, &rej) || errors.Is(err, organism.ErrConversationKilled) {
		t.Errorf("code rejected: %v, want a *Rejection only", err)
	}
}
