package pump

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// UnroutedError is the failure of messages no listener takes, sent by a
// listener that cannot hear of it (it has no error handler: a plain Go
// handler, a WASM guest without a response contract): its raw output of
// root tags nobody registered, or a Send to a name nobody has. The
// listener's caller is told instead (a <huh> whose text is Text), so it
// does not wait for an answer that never comes. errors.Is finds
// failure.ErrNoRoute through it.
type UnroutedError struct {
	// Listener is the name of the listener whose output it was.
	Listener string
	// Tags are the root tags of the output's messages that have no route,
	// each once, in the order of the output.
	Tags []string
	// Err is the routing stage's failure (of every message, joined, when
	// several have none); its diagnostics (which name the topology) go to
	// the log, the journal and the operators only.
	Err error
	// errs are the routing stage's failures, one per tag.
	errs []error
}

// Error says whose output had no route, and why.
func (e *UnroutedError) Error() string {
	if len(e.Tags) == 1 {
		return fmt.Sprintf("%s: its answer <%s> has no route: %v", e.Listener, e.Tags[0], e.Err)
	}
	return fmt.Sprintf("%s: its answers %s have no route: %v", e.Listener, tagList(e.Tags), e.Err)
}

// Unwrap returns the routing stage's failure.
func (e *UnroutedError) Unwrap() error { return e.Err }

// Text is what the caller's <huh> says: the answers' tags and the
// listener that sent them — a listener the caller reached, so within its
// profile — and never which listeners exist: a tag whose listeners are
// outside the caller's profile reads as one nobody registered.
func (e *UnroutedError) Text() string {
	if len(e.Tags) == 1 {
		return fmt.Sprintf("Answer <%s> from %s has no route", e.Tags[0], e.Listener)
	}
	return fmt.Sprintf("Answers %s from %s have no route", tagList(e.Tags), e.Listener)
}

// tagList is "<A>, <B>".
func tagList(tags []string) string {
	var b strings.Builder
	for i, t := range tags {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("<" + t + ">")
	}
	return b.String()
}

// add records that l's output of root tag tag has no route (err): a tag
// already named is not named twice.
func (e *UnroutedError) add(tag string, err error) {
	if slices.Contains(e.Tags, tag) {
		return
	}
	e.Tags = append(e.Tags, tag)
	e.errs = append(e.errs, err)
	if len(e.errs) == 1 {
		e.Err = err
	} else {
		e.Err = errors.Join(e.errs...)
	}
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
	u := &UnroutedError{Listener: w.sender.Name}
	u.add(tag, err)
	return u, true
}

// tellUnrouted tells the caller of d that l's output of u.Tags has no
// route, l having no error handler to hear it, and logs it: the
// reference's "No listener for: {key}", once per tag, with the listener,
// tag and thread l's handler ran on.
func (p *Pump) tellUnrouted(l *listener, d *delivery, u *UnroutedError) {
	for i, tag := range u.Tags {
		detail := u.Err
		if i < len(u.errs) {
			detail = u.errs[i]
		}
		p.log.Warn("No listener for: "+strings.ToLower(tag), "listener", l.Name, "tag", tag, "thread", d.thread,
			"caller", d.from, "detail", detail)
	}
	p.tell(l, d, u)
}
