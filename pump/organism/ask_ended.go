package organism

import "fmt"

// AskEndedError is the error of an Ask, AskText, Continue or ContinueText
// whose context ended before the answer came: Conversation names the
// conversation the call began or continued, which the pump killed
// (pump.Pump.Ask) unless the call was made under pump.KeepOnCancel (then
// it runs on, and Continue waits for it) — its history, journal and trace are found by that id
// (ctl get-thread-history, Organism.Pump's Threads), and a new question is
// asked with Ask (Continue on a killed conversation is refused with
// pump.ErrContinueKilled). Err is the pump's error, which wraps the
// context's cause: errors.Is(err, context.DeadlineExceeded) or
// context.Canceled still holds.
type AskEndedError struct {
	// Conversation is the conversation's id (a thread id).
	Conversation string
	// Err is why the call ended: the pump's error wrapping the context's
	// cause.
	Err error
}

// Error names the conversation and says why the call ended.
func (e *AskEndedError) Error() string {
	return fmt.Sprintf("conversation %s: %v", e.Conversation, e.Err)
}

// Unwrap returns Err.
func (e *AskEndedError) Unwrap() error { return e.Err }
