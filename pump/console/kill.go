package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// cmdKill is /kill <agent>|<tid>: the conversation stops for good, as POST
// /api/v1/threads/{id}/kill stops it — its running calls cancelled, its
// queued messages dropped, its held approvals expired. An agent's name
// names this console's conversation with it; anything else is a thread id
// or the start of one (as /threads shows it), among this console's
// conversations and the organism's live threads.
func (c *Console) cmdKill(ctx context.Context, arg string) {
	k, ok := c.b.(organism.Killer)
	if !ok {
		c.say("Killing conversations is not available over this connection.")
		return
	}
	if arg == "" || strings.ContainsAny(arg, " \t") {
		c.say("Usage: /kill <agent>|<tid>  (an agent: this console's conversation with it; a thread id or its start, as /threads shows it)")
		return
	}
	id, err := c.killTarget(ctx, arg)
	if err != nil {
		c.say(err.Error())
		return
	}
	// Marked first: the conversation's completion may be told before Kill
	// returns — and when id is not one of the console's running
	// conversations (an inner thread), which one it stops is known only
	// then: the early ends told meanwhile wait for it (killDone).
	known := c.convs.killing(id)
	conv, err := k.Kill(ctx, id)
	stopped := conv
	if err != nil {
		stopped = ""
	}
	for _, h := range c.convs.killDone(id, stopped, known) {
		c.say(c.convs.endedEarly(h.conv, h.text))
	}
	switch {
	case errors.Is(err, organism.ErrConversationEnded):
		// Nothing runs to stop; this console still begins anew at the
		// agent's next line, as the operator asked.
		c.convs.announced(id)
		c.say("Nothing to kill: " + c.convs.endedEarly(cmp.Or(conv, id), "conversation already ended"))
		return
	case errors.Is(err, organism.ErrUnknownThread):
		c.convs.announced(id)
		c.say("Cannot kill " + arg + ": no live conversation you may stop has that thread")
		return
	case err != nil:
		c.convs.announced(id)
		c.say("Error: " + err.Error())
		return
	}
	c.say("Killed: " + c.convs.endedEarly(conv, "conversation killed"))
}

// killTarget resolves /kill's argument to a thread id: the console's
// current conversation with an agent of that name, else the one thread id
// (of the console's conversations and the live threads) starting with it;
// a full id is taken as it is.
func (c *Console) killTarget(ctx context.Context, arg string) (string, error) {
	if conv := c.convs.currentOf(strings.ToLower(arg)); conv != "" {
		return conv, nil
	}
	if len(arg) >= len("00000000-0000-0000-0000-000000000000") {
		return arg, nil
	}
	var ids []string
	add := func(id string) {
		if strings.HasPrefix(id, arg) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, conv := range c.convs.currents() {
		add(conv)
	}
	if ts, err := c.b.Threads(ctx); err == nil {
		for _, t := range ts {
			if !t.Ended {
				add(t.ID)
			}
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no agent of this console's conversations and no live thread matches %s (/threads lists them)", arg)
	case 1:
		return ids[0], nil
	}
	shown := make([]string, len(ids))
	for i, id := range ids {
		shown[i] = short(id)
	}
	slices.Sort(shown)
	return "", fmt.Errorf("%s matches %d threads (%s): give more of its id", arg, len(ids), strings.Join(shown, ", "))
}
