package mcp

import (
	"errors"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// What an MCP client is told of a failed call is what the wire would tell
// a sender: the canned <huh> text or the SystemError's message, never the
// error chain behind it (a handler's error, a meta refusal's reason, a
// backend's URL, a path, a listener outside the client's profile). The
// details go to the log, the journal and the OOB channel. The exception
// is what the client itself got wrong: the diagnostics of its own message
// at the payload and decode stages name the fields of its arguments that
// do not fit, and the *xmlpipe.InputError of the handler it called says
// what its input lacks — the client needs both to correct the call.

// rejectedText is the tool error of a call whose message the pump refused
// at ingress: the canned text, with the diagnostics about the client's own
// arguments.
func rejectedText(f *failure.Failure) string {
	msg := "the message was rejected: " + f.Canned()
	var own []string
	for _, d := range f.Diagnostics {
		if d.Stage == failure.StagePayload || d.Stage == failure.StageDecode {
			own = append(own, d.String())
		}
	}
	if len(own) > 0 {
		msg += ": " + strings.Join(own, "; ")
	}
	return msg
}

// isAskError reports whether err is a conversation's failure after its
// message was taken (a *pump.AskError), not the message's refusal.
func isAskError(err error) bool {
	_, ok := errors.AsType[*pump.AskError](err)
	return ok
}

// failedText is the tool error of a conversation that failed (a <huh>, a
// SystemError, a dead letter): the canned text its event carries on the
// wire (failure.Undelivered for a dead letter, whose reason may be a
// handler's error) — and, for a <huh> told to the client itself (asker,
// the bridge's sender) whose cause is an *xmlpipe.InputError, that
// error's text, written for the caller. An InputError of a listener
// further on is about a message the client did not write, and stays with
// the details.
func failedText(e pump.Event, asker string) string {
	if e.Kind == pump.EventDeadLetter {
		return failure.Undelivered // its reason may carry a handler's error
	}
	if e.Error != "" {
		if ie, ok := errors.AsType[*xmlpipe.InputError](e.Cause); ok && e.Kind == pump.EventHuh && e.To == asker {
			return e.Error + ": " + ie.Error()
		}
		return e.Error
	}
	if se, ok := e.Payload.(*xmlpipe.SystemError); ok && se != nil && se.Message != "" {
		return se.Message
	}
	return failure.HuhProcessing
}

// sendText is the tool error of a message the pump could not take: the
// pump's sentinel, without the detail that wraps it; while the storage
// cannot commit, the refusal's text (why, and that nothing was done).
func sendText(err error) string {
	if r, ok := errors.AsType[*pump.StorageRefusal](err); ok {
		return "the message could not be sent: " + r.Text()
	}
	if errors.Is(err, pump.ErrNotDurable) {
		return "the message was handed on but not journaled (the organism could not record it): it may still be answered, " +
			"but it will not survive a restart"
	}
	for _, s := range []error{pump.ErrBusy, pump.ErrClosed, pump.ErrNotStarted} {
		if errors.Is(err, s) {
			return "the message could not be sent: " + s.Error()
		}
	}
	return "the message could not be sent"
}

// endedText is the tool error of a conversation the organism ended before
// it answered — killed (an operator's kill, a halted organism's drop) or
// its answer cancelled — or "" for any other error.
func endedText(err error) string {
	switch {
	case errors.Is(err, pump.ErrConversationKilled):
		return "the conversation was killed before it answered (by an operator): call again for a new one"
	case errors.Is(err, pump.ErrCancelled):
		return "the answer was cancelled (by an operator): call again to ask anew"
	}
	return ""
}
