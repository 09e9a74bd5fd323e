package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/bus/client"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// cancelledNote ends the line that says a conversation's answer was
// cancelled: the conversation itself goes on.
const cancelledNote = "cancelled; the conversation goes on"

// cmdCancel is /cancel [agent|tid]: the answer in flight of a conversation
// stops and the conversation goes on (the agent's next @ line continues
// it), as POST /api/v1/threads/{id}/cancel does — its running calls
// cancelled, its queued messages dropped. Without an argument it cancels
// every conversation of this console still answering, as a Ctrl-C does;
// an agent's name names this console's conversation with it, anything else
// a thread id or its start (as /kill takes them).
func (c *Console) cmdCancel(ctx context.Context, arg string) {
	if _, ok := c.b.(organism.Canceller); !ok {
		c.say("Cancelling answers is not available over this connection.")
		return
	}
	if strings.ContainsAny(arg, " \t") {
		c.say("Usage: /cancel [agent|tid]  (none: every answer of this console still coming; an agent: this console's conversation with it; a thread id or its start)")
		return
	}
	if arg == "" {
		if c.cancelRunning(ctx, "") == 0 {
			c.say("Nothing to cancel: none of this console's conversations is answering.")
		}
		return
	}
	id, err := c.killTarget(ctx, arg)
	if err != nil {
		c.say(err.Error())
		return
	}
	c.cancelOne(ctx, "", id, arg)
}

// cancelRunning cancels the answers of every conversation of this console
// still running, each line prefixed with prefix; it returns how many it
// tried.
func (c *Console) cancelRunning(ctx context.Context, prefix string) int {
	running := c.convs.runningConvs()
	for _, conv := range running {
		c.cancelOne(ctx, prefix, conv, short(conv))
	}
	return len(running)
}

// cancelOne cancels the answer of the conversation id (named arg by the
// user) and says how it went, prefixed with prefix.
func (c *Console) cancelOne(ctx context.Context, prefix, id, arg string) {
	k := c.b.(organism.Canceller)
	// Marked first: the conversation's completion may be told before
	// Cancel returns, and this line says it.
	known := c.convs.killing(id)
	conv, err := k.Cancel(ctx, id)
	stopped := conv
	if err != nil {
		stopped = ""
	}
	for _, h := range c.convs.killDone(id, stopped, known) {
		c.say(c.convs.endedEarly(h.conv, h.text))
	}
	switch {
	case errors.Is(err, organism.ErrConversationEnded):
		c.convs.announced(id)
		c.say(prefix + "Nothing to cancel: " + c.convs.labelOf(conv, id) + " is not answering")
	case errors.Is(err, organism.ErrUnknownThread):
		c.convs.announced(id)
		c.say(prefix + "Cannot cancel " + arg + ": no live conversation you may stop has that thread")
	case err != nil:
		c.convs.announced(id)
		c.say(prefix + "Error: " + err.Error())
	default:
		// The note is true once it shows: the conversation has completed
		// (its handlers returned), so the agent's next line continues it
		// rather than find it still answering. What its stream showed
		// stays as a line of its own above the note, no longer live.
		c.convs.settled(ctx, conv)
		c.live.complete(conv)
		c.say(prefix + c.convs.labelOf(conv, id) + " " + cancelledNote)
	}
}

// interruptCancels handles a Ctrl-C while the console's conversations are
// answering over a backend that can cancel: every one of them is cancelled
// (a Ctrl-C means "stop what is coming", not "stop one of them"), each said
// as "^C: poet#3f2a1b2c cancelled; the conversation goes on".
func (c *Console) interruptCancels(ctx context.Context) {
	c.cancelRunning(ctx, "^C: ")
}

// Cancel implements organism.Canceller over POST
// /api/v1/threads/{id}/cancel (the conversation's owner, or an admin).
func (r *Remote) Cancel(ctx context.Context, thread string) (string, error) {
	var out struct {
		ThreadID string `json:"thread_id"`
	}
	err := r.rest(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(thread)+"/cancel", nil, &out)
	se, ok := errors.AsType[*client.StatusError](err)
	switch {
	case ok && se.Status == http.StatusConflict: // nothing in flight: completed, failed or killed
		return thread, fmt.Errorf("%w: %s", organism.ErrConversationEnded, thread)
	case ok && se.Status == http.StatusNotFound:
		return "", fmt.Errorf("%w: %s", organism.ErrUnknownThread, thread)
	}
	return out.ThreadID, err
}
