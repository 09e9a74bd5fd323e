package oob

import (
	"context"
	"errors"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// unregisterTimeout bounds unregister-listener's wait for running handlers.
const unregisterTimeout = 60 * time.Second

// registerListener hot-adds a listener: from the catalog, or by the class
// convention (listener_kinds.go) a WASM listener or a YAML agent.
func (o *operations) registerListener(p *Operations) reply {
	if o.t.Listeners == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot add listeners while running", "")
	}
	a := p.RegisterListener
	lc, err := listenerConfig(a)
	if err != nil {
		return o.s.fail(p.ID, CodeInvalidArgument, "the listener could not be registered", err.Error())
	}
	if err := o.t.Listeners.AddListener(lc); err != nil {
		o.broadcast(PushPayload{ListenerEvent: &ListenerEvent{EventType: "error", Name: a.Name, Details: err.Error()}})
		code := CodeInvalidArgument
		switch {
		case errors.Is(err, pump.ErrClosed):
			code = CodeShuttingDown
		case errors.Is(err, errors.ErrUnsupported):
			code = CodeNotSupported
		}
		return o.s.fail(p.ID, code, "the listener could not be registered", err.Error())
	}
	if err := o.storeListener(*a); err != nil {
		// Not stored, not kept: it would vanish at the next start.
		ctx, cancel := context.WithTimeout(context.Background(), unregisterTimeout)
		rerr := o.t.Listeners.RemoveListener(ctx, a.Name)
		cancel()
		if rerr != nil {
			o.s.log.Error("listener registered over OOB but neither stored nor removed", "listener", a.Name,
				"error", err, "remove_error", rerr)
		}
		return o.s.fail(p.ID, CodeInternal, "the listener could not be stored", err.Error())
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
	err := o.t.Listeners.RemoveListener(ctx, name)
	if err == nil || errors.Is(err, pump.ErrUnknownListener) || errors.Is(err, context.DeadlineExceeded) {
		// Gone from the table (or never there): not registered again at
		// the next start.
		stored, ferr := o.forgetListener(name)
		if ferr != nil {
			return o.s.fail(p.ID, CodeInternal, "the listener store could not be written", ferr.Error())
		}
		if stored && errors.Is(err, pump.ErrUnknownListener) {
			o.s.log.Warn("stored listener forgotten over OOB (it was not running)", "listener", name)
			return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true,
				Message: "listener " + name + " forgotten (it was not running)"}})}
		}
	}
	if err != nil {
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
