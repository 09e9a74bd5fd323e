package bus

import (
	"errors"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
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

// readingStages are the stages that read a message as it was sent, before
// any handler saw it: their diagnostics say what was wrong with it.
var readingStages = map[string]bool{
	string(failure.StageSize): true, string(failure.StageParse): true, string(failure.StageRepair): true,
	string(failure.StageC14N): true, string(failure.StageEnvelope): true, string(failure.StageExtract): true,
	string(failure.StageThread): true, string(failure.StageRoute): true, string(failure.StagePayload): true,
	string(failure.StageDecode): true,
}

// callerStages are the stages whose journaled diagnostics every user who
// may read an entry reads: the reading stages', and a handler's
// *xmlpipe.InputError's text (failure.StageInput), written for the sender.
var callerStages = func() map[string]bool {
	m := map[string]bool{string(failure.StageInput): true}
	for s := range readingStages {
		m[s] = true
	}
	return m
}()

// journalDiagnostics returns the diagnostics the journal recorded with an
// entry of kind (one a line) as a user who sees details or not (details)
// may read them. Those users read them all; the others read a refusal's
// or a decision's reasons (told as they are on /ws too), a dead letter as
// the canned failure.Undelivered, and of a <huh> or SystemError only what
// the stages reading a message found (failure.Diagnostic's "stage …:"
// lines of readingStages) and the text of a handler's *xmlpipe.InputError
// (failure.StageInput) — never a handler's error.
func journalDiagnostics(kind store.Kind, lines []string, details bool) []string {
	if details || len(lines) == 0 {
		return lines
	}
	switch kind {
	case store.Refusal, store.Decision:
		return lines
	case store.DeadLetter:
		return []string{failure.Undelivered}
	}
	var out []string
	for _, l := range lines {
		if stage, _, ok := strings.Cut(l, ":"); ok && callerStages[strings.SplitN(stage, " ", 2)[0]] {
			out = append(out, l)
		}
	}
	return out
}

// lastErrorFor is a listener's last handler failure, msg, as sess may
// read it: msg itself for a user who sees details, else the canned text.
func lastErrorFor(sess auth.Session, msg string) string {
	if seesFailureDetail(sess) {
		return msg
	}
	return failure.HuhProcessing
}

// toldSender is the Told of a huh frame: the text of the handler's
// *xmlpipe.InputError when the huh goes to a user's session identity
// ("console:alice", "websocket:alice", "api:alice": the sender of the
// failed message, which the handler wrote it for), "" otherwise — a huh an
// agent gets is the agent's. Every user who reads the huh reads that text
// among its diagnostics too (callerDiagnostics).
func toldSender(e pump.Event) string {
	src, user, ok := strings.Cut(e.To, ":")
	if !ok || user == "" || src != sourceConsole && src != sourceWebSocket && src != sourceAPI {
		return ""
	}
	if ie, ok := errors.AsType[*xmlpipe.InputError](e.Cause); ok {
		return ie.Error()
	}
	return ""
}
