package xmlpipe

import "errors"

// ErrConversationKilled is the cause (context.Cause) of a handler's context
// when its conversation was killed (an operator's kill, a budget): nobody
// takes the handler's answer any more, so a handler that notices it may
// stop without one. The pump's pump.ErrConversationKilled is this error.
var ErrConversationKilled = errors.New("pump: conversation killed")
