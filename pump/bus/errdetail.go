package bus

import (
	"errors"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// What a client is told of a failure on the bus (DESIGN §2): errors travel
// as canned, generic text, and the details — a handler's error chain, a
// panic value, why a meta question was refused, a dead letter's reason —
// go to the log, the journal, the OOB channel and the organism's operators
// only. Two kinds of detail reach every client: the diagnostics of its own
// message that the stages refused (what it sent and may correct, as an
// inject's 422 gives them), and a handler's *xmlpipe.InputError, whose text
// its handler wrote for the sender.

// seesFailureDetail reports whether sess is told the details of failures:
// an operator or admin without a security profile, one who runs the
// organism. A viewer, and any user confined to a profile, is not.
func seesFailureDetail(sess auth.Session) bool {
	return sess.Profile == "" && sess.Role.Allows(auth.Operator)
}

// callerDiagnostics returns the diagnostics of the <huh> event e that a
// client not told the details may read: those of its own message refused
// by the stages (a <huh> naming no listener, whose cause is no handler's
// failure), or the text of the handler's *xmlpipe.InputError; nil for any
// other.
func callerDiagnostics(e pump.Event) []string {
	if len(e.Diagnostics) == 0 || e.Cause == nil {
		return nil
	}
	if ie, ok := errors.AsType[*xmlpipe.InputError](e.Cause); ok {
		return []string{failure.Diagnostic{Stage: failure.StageHandler, Msg: ie.Error()}.String()}
	}
	if e.Listener == "" && !errors.Is(e.Cause, failure.ErrHandler) {
		return e.Diagnostics
	}
	return nil
}
