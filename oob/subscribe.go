package oob

import (
	"strconv"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// subscribe starts thread-event pushes on this connection.
func (o *operations) subscribe(p *Operations, c *conn) reply {
	if c == nil {
		return o.s.fail(p.ID, CodeNotSupported, "subscriptions need a connection", "")
	}
	a := *p.SubscribeThread
	id := "sub-" + strconv.FormatInt(o.nextSub.Add(1), 10)
	cancel := o.t.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if ev := threadEvent(e, a); ev != nil {
			c.push(o.push(id, PushPayload{ThreadEvent: ev}))
		}
	}))
	if !c.addSub(id, cancel) {
		cancel()
		return o.s.fail(p.ID, CodeShuttingDown, "the connection is closing", "")
	}
	o.cmu.Lock()
	if o.watch[c] == nil {
		o.watch[c] = map[string]bool{}
	}
	o.watch[c][id] = true
	o.cmu.Unlock()
	return reply{resp: o.s.response(p.ID, ResponsePayload{Subscription: &SubscriptionResult{SubscriptionID: id}})}
}

// unwatch forgets a cancelled subscription.
func (o *operations) unwatch(c *conn, id string) {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	delete(o.watch[c], id)
	if len(o.watch[c]) == 0 {
		delete(o.watch, c)
	}
}

// push builds a push frame.
func (o *operations) push(id string, p PushPayload) *Push {
	p.SubscriptionID = id
	return &Push{Version: Version, Timestamp: o.s.opts.Clock().UTC(), Payload: p}
}

// systemEvent pushes an organism-wide event to every subscription.
func (o *operations) systemEvent(kind, msg, details string) {
	o.broadcast(PushPayload{SystemEvent: &SystemEvent{EventType: kind, Message: msg, Details: details}})
}

// broadcast pushes p on every live subscription.
func (o *operations) broadcast(p PushPayload) {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	for c, ids := range o.watch {
		select {
		case <-c.done:
			delete(o.watch, c)
			continue
		default:
		}
		for id := range ids {
			c.push(o.push(id, p))
		}
	}
}

// threadEvent maps a pump event to a thread-event, nil when the
// subscription does not want it.
func threadEvent(e pump.Event, a SubscribeThread) *ThreadEvent {
	if a.ThreadID != "" && e.Thread != a.ThreadID && e.Conversation != a.ThreadID {
		return nil
	}
	if a.Listener != "" && !strings.EqualFold(e.Listener, a.Listener) && !strings.EqualFold(e.To, a.Listener) &&
		!strings.EqualFold(e.From, a.Listener) {
		return nil
	}
	ev := &ThreadEvent{ThreadID: e.Thread, From: e.From, To: e.To, PayloadType: e.PayloadName}
	switch e.Kind {
	case pump.EventMessage, pump.EventReply:
		ev.EventType = "message"
		if ev.To == "" {
			ev.To = e.Listener
		}
		if a.IncludePayloads && len(e.Envelope) > 0 {
			ev.Payload = string(payloadOf(e.Envelope))
		}
	case pump.EventComplete:
		ev.EventType = "complete"
		if ev.ThreadID == "" {
			ev.ThreadID = e.Conversation
		}
	case pump.EventHuh, pump.EventSystemError, pump.EventDeadLetter:
		ev.EventType, ev.ErrorMessage = "error", e.Error
	default:
		return nil
	}
	return ev
}
