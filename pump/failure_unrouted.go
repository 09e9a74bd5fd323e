package pump

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// UnroutedError is the failure of a message no listener takes, sent by a
// listener that cannot hear of it (it has no error handler: a plain Go
// handler, a WASM guest without a response contract): its raw output of a
// root tag nobody registered, or a Send to a name nobody has. The
// listener's caller is told instead (a <huh> whose text is Text), so it
// does not wait for an answer that never comes. errors.Is finds
// failure.ErrNoRoute through it.
type UnroutedError struct {
	// Listener is the name of the listener whose output it was.
	Listener string
	// Tag is the output's root tag.
	Tag string
	// Err is the routing stage's failure; its diagnostics (which name the
	// topology) go to the log, the journal and the operators only.
	Err error
}

// Error says whose output had no route, and why.
func (e *UnroutedError) Error() string {
	return fmt.Sprintf("%s: its answer <%s> has no route: %v", e.Listener, e.Tag, e.Err)
}

// Unwrap returns the routing stage's failure.
func (e *UnroutedError) Unwrap() error { return e.Err }

// Text is what the caller's <huh> says: the answer's tag and the listener
// that sent it — a listener the caller reached, so within its profile —
// and never which listeners exist: a tag whose listeners are outside the
// caller's profile reads as one nobody registered.
func (e *UnroutedError) Text() string {
	return fmt.Sprintf("Answer <%s> from %s has no route", e.Tag, e.Listener)
}

// huhAbout is the <huh> telling a sender of err, a failure about its
// message original: the canned text, or an UnroutedError's own.
func huhAbout(err error, original []byte) *xmlpipe.Huh {
	h := stage.NewHuh(err, original)
	if u, ok := errors.AsType[*UnroutedError](err); ok {
		h.Error = u.Text()
	}
	return h
}

// unroutedOutput reports whether err refused output of w's sender that has
// no route and that its sender cannot hear of (w.answers is set, and the
// output is no reply: a reply its caller does not take is told as a
// refused answer), returning the UnroutedError its caller is told.
func unroutedOutput(w *work, tag string, err error) (*UnroutedError, bool) {
	if w.answers == nil || w.prune != "" || w.sender == nil || !errors.Is(err, failure.ErrNoRoute) {
		return nil, false
	}
	return &UnroutedError{Listener: w.sender.Name, Tag: tag, Err: err}, true
}

// tellUnrouted tells the caller of d that l's output of root tag tag has
// no route (err, the routing failure, or the UnroutedError saying so), l
// having no error handler to hear it, and logs it once: the reference's
// "No listener for: {key}" with the listener, tag and thread l's handler
// ran on.
func (p *Pump) tellUnrouted(l *listener, d *delivery, tag string, err error) {
	u, ok := errors.AsType[*UnroutedError](err)
	if !ok {
		u = &UnroutedError{Listener: l.Name, Tag: tag, Err: err}
	}
	p.log.Warn("No listener for: "+strings.ToLower(u.Tag), "listener", l.Name, "tag", u.Tag, "thread", d.thread,
		"caller", d.from, "detail", u.Err)
	p.tell(l, d, u)
}
