package xmlpipe

import "context"

// MessageSeq returns the journal seq of the message whose handling ctx
// belongs to: the same for every handling of the message, before and after
// a restart, and different for two messages alike in everything else. It
// is 0 when the message was not journaled, or ctx holds no handling that
// knows it (SettleKey's value, with a MessageSeq() int64 method; a handler
// called outside the pump).
func MessageSeq(ctx context.Context) int64 {
	if h, ok := ctx.Value(SettleKey{}).(interface{ MessageSeq() int64 }); ok {
		return h.MessageSeq()
	}
	return 0
}
