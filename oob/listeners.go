package oob

import (
	"context"
	"errors"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// unregisterTimeout bounds unregister-listener's wait for running handlers.
const unregisterTimeout = 60 * time.Second

// registerListener hot-adds a listener from the catalog.
func (o *operations) registerListener(p *Operations) reply {
	if o.t.Listeners == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot add listeners while running", "")
	}
	a := p.RegisterListener
	lc := config.Listener{Name: a.Name, PayloadClass: a.Class, Handler: a.Handler, Description: a.Description,
		MaxConcurrent: a.MaxConcurrent}
	if a.IsAgent != nil {
		lc.Agent = *a.IsAgent
	}
	if a.Broadcast != nil {
		lc.Broadcast = *a.Broadcast
	}
	if a.Peers != nil {
		lc.Peers = a.Peers.Peers
	}
	if err := o.t.Listeners.AddListener(lc); err != nil {
		o.broadcast(PushPayload{ListenerEvent: &ListenerEvent{EventType: "error", Name: a.Name, Details: err.Error()}})
		code := CodeInvalidArgument
		if errors.Is(err, pump.ErrClosed) {
			code = CodeShuttingDown
		}
		return o.s.fail(p.ID, code, "the listener could not be registered", err.Error())
	}
	o.cmu.Lock()
	o.classes[lowerName(a.Name)] = a.Class
	o.cmu.Unlock()
	o.s.log.Warn("listener registered over OOB", "listener", a.Name, "class", a.Class, "handler", a.Handler)
	o.broadcast(PushPayload{ListenerEvent: &ListenerEvent{EventType: "registered", Name: a.Name}})
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: "listener " + a.Name + " registered"}})}
}

// unregisterListener removes a listener once its running handlers finished.
func (o *operations) unregisterListener(p *Operations) reply {
	if o.t.Listeners == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot remove listeners while running", "")
	}
	name := p.UnregisterListener.Name
	ctx, cancel := context.WithTimeout(context.Background(), unregisterTimeout)
	defer cancel()
	if err := o.t.Listeners.RemoveListener(ctx, name); err != nil {
		code := CodeInvalidArgument
		switch {
		case errors.Is(err, pump.ErrUnknownListener):
			code = CodeNotFound
		case errors.Is(err, context.DeadlineExceeded):
			code = CodeBusy
		}
		return o.s.fail(p.ID, code, "the listener could not be unregistered", err.Error())
	}
	o.s.log.Warn("listener unregistered over OOB", "listener", name)
	o.broadcast(PushPayload{ListenerEvent: &ListenerEvent{EventType: "unregistered", Name: name}})
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: "listener " + name + " unregistered"}})}
}
