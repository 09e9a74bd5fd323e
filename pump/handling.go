package pump

import "context"

// handlingKey is the context key under which the pump gives a handler the
// delivery mark of the journaled message it handles.
type handlingKey struct{}

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
	if m, ok := ctx.Value(handlingKey{}).(*deliveryMark); ok && m != nil {
		return m.seq, m.recovered
	}
	return 0, false
}
