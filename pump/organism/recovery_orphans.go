package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// callOrphans tells, during a recovery, which conversations are orphaned
// calls: begun by a callable's call (their first message came from
// callSender) and not answered when the organism stopped. The call that
// waited for such a conversation was a handler running at the crash; its
// message is re-delivered and begins the callee's conversation anew (a
// call is at least once across a crash, as an immediate shutdown, which
// kills the conversation it gave up, leaves it). Re-delivered as well, the
// orphan would run the callee's work a second time at once — its model
// turns and tool calls included — for an answer nobody waits for.
type callOrphans map[string]orphanState

// orphanState is what the recovery knows of one conversation.
type orphanState uint8

const (
	notOrphan orphanState = iota + 1
	orphanKilled
)

// of reports whether conv is an orphaned call, ending it the first time:
// its kill is recorded (final across restarts, as ctl kill-thread's) and
// its threads end.
func (c callOrphans) of(ctx context.Context, o *Organism, s *store.Store, conv string) (bool, error) {
	switch c[conv] {
	case notOrphan:
		return false, nil
	case orphanKilled:
		return true, nil
	}
	es, err := s.Conversation(conv)
	if err != nil {
		return false, fmt.Errorf("conversation %s: %w", conv, err)
	}
	if len(es) == 0 || es[0].Direction != store.Inbound || !strings.HasPrefix(es[0].From, callSender("")) {
		c[conv] = notOrphan
		return false, nil
	}
	for i := range es {
		if es[i].Direction == store.Outbound && es[i].Kind == store.Message && strings.EqualFold(es[i].To, es[0].From) {
			c[conv] = notOrphan // answered: what it does after is its own
			return false, nil
		}
	}
	if err := s.RecordKill(ctx, store.Kill{Conversation: conv}); err != nil {
		return false, err
	}
	if err := o.Pump.Threads().End(conv); err != nil && !errors.Is(err, registry.ErrUnknownThread) {
		return false, fmt.Errorf("end orphaned call %s: %w", conv, err)
	}
	c[conv] = orphanKilled
	o.log.Info("recovery: a call's conversation nobody waits for any more was killed; its call, re-delivered, "+
		"begins it anew", "thread", conv, "caller", es[0].From)
	return true, nil
}
