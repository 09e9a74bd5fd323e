package pump

import (
	"context"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// handlingKey is the context key under which the pump gives a handler its
// handling: xmlpipe's, so that xmlpipe.Settle finds it in the same value.
type handlingKey = xmlpipe.SettleKey

// handling is what a handler call's context carries: the delivery mark of
// the journaled message it handles (nil: none), what runs once its
// outputs are journaled (AfterJournal) and whether the handler settled
// (xmlpipe.Settle). It lives in the handlerCall.
type handling struct {
	mark  *deliveryMark
	after afterJournal
	// settled is the handler's xmlpipe.Settle: a halted handling whose
	// handler settled it is concluded by its response.
	settled atomic.Bool
	// call is the handler call it belongs to (Detach).
	call *handlerCall
}

// Settle records the handler's xmlpipe.Settle.
func (h *handling) Settle(settled bool) { h.settled.Store(settled) }

// MessageSeq is xmlpipe.MessageSeq: the seq MessageSeq returns.
func (h *handling) MessageSeq() int64 { return h.mark.messageSeq() }

// MessageSeq returns the journal seq of the message whose handling ctx
// belongs to (the context the pump passed the handler), and whether that
// handling is a re-delivery after a restart (Recover). The seq is the same
// for every handling of the message, before and after a crash, and differs
// between messages — even two with the same payload on the same thread — so
// a handler can derive from it an identity for a side effect that a
// re-delivery must not repeat (the federation names its calls with it).
// It is 0 when the message was not journaled or the journal takes no
// delivery marks (see DeliveryJournal). Note that the pump may run a
// handler before the message's record is durable (DurableJournal): a
// handler that lets a side effect leave the process waits for the seq
// first.
func MessageSeq(ctx context.Context) (seq int64, recovered bool) {
	if h, ok := ctx.Value(handlingKey{}).(*handling); ok && h != nil && h.mark != nil {
		return h.mark.seq, h.mark.recovered
	}
	return 0, false
}
