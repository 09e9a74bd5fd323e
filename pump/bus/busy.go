package bus

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// busyText is the start of every answer to a message the organism was too
// busy to take (pump.ErrBusy): REST 429 and stream errors, /ws error frames
// and the <huh> a /bus client gets.
const busyText = "Organism busy"

// busyOf reports whether err is a pump.ErrBusy refusal and, if so, the
// answer's text ("Organism busy: listener greeter busy") and its retry hint
// in whole seconds (at least 1).
func busyOf(err error) (text string, retryAfter int, ok bool) {
	if !errors.Is(err, pump.ErrBusy) {
		return "", 0, false
	}
	text, retryAfter = busyText, 1
	if b, isBusy := errors.AsType[*pump.BusyError](err); isBusy {
		text += ": " + b.Reason
		retryAfter = max(1, int(math.Ceil(b.RetryAfter.Seconds())))
	}
	return text, retryAfter, true
}

// busyAPIError is the REST answer to a busy refusal: 429 {"error":
// "Organism busy: …", "retry_after": N} with Retry-After: N.
func busyAPIError(text string, retryAfter int) *apiError {
	return &apiError{status: http.StatusTooManyRequests, retryAfter: retryAfter,
		body: errorBody{Error: text, RetryAfter: retryAfter}}
}

// writeAPIError writes e, with its Retry-After header when it has one.
func writeAPIError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	writeJSON(w, e.status, e.body)
}

// refusingEarly returns the refusal the pump gives a new message to target
// right now (pump.Pump.Refusing: while its storage cannot commit, else
// busy as admission decides), asked before anything of the
// message is built, parsed or validated: under overload the messages the
// organism will not take then cost it a lookup, not the ingress stages,
// and the refusal carries the same text and retry hint. Nil when the
// message is not refused so, and, for a busy refusal, when thread (a conversation the message
// continues: "" for a new one) is one who may not send on: the pump's
// ownership check answers that message, as ever, and logs the security
// event. The ownership lookup is made only for a message about to be
// refused. A busy refusal it returns is counted (pump.Pump.RefusedEarly):
// the caller answers it.
func (s *Server) refusingEarly(who pump.Principal, target, thread string) error {
	err := s.pump.Refusing(target)
	if err == nil {
		return nil
	}
	if errors.Is(err, pump.ErrCannotJournal) {
		// The storage cannot commit: the pump refuses every new message
		// so before reading it, whoever's conversation it names.
		return err
	}
	if thread != "" && s.pump.CheckThread(who, thread) != nil {
		return nil
	}
	s.pump.RefusedEarly(target)
	return err
}
