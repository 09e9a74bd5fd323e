package main

import (
	"context"
	"sync/atomic"
	"time"
)

// runControl is the bus's Controller in `xmlpipe run`: a stop request is
// handed to the serving loop, which shuts the organism down; a reload is
// applied in place (serveRunner.reload) before the request is answered.
type runControl struct {
	stop chan struct{} // buffered (1): a request is never lost, repeats collapse
	// reload reloads the organism in place, naming what asked for it.
	reload func(via string) error
	// drain, when set (by an OOB shutdown), bounds the organism's shutdown:
	// the nanoseconds to wait.
	drain atomic.Int64
	// immediate marks an OOB shutdown in mode immediate: the organism stops
	// without draining (organism.Organism.ShutdownNow).
	immediate atomic.Bool
	// via names what asked first to stop, for the log.
	via atomic.Pointer[string]
}

// stopWith asks the serving loop to stop, draining for at most timeout
// (0: the pump's shutdown_timeout); immediate does not drain: running
// handlers are cancelled and queued messages stay in the journal for
// recovery, waiting at most timeout for handlers that ignore the
// cancellation.
func (c *runControl) stopWith(graceful bool, timeout time.Duration, reason string) {
	via := "an OOB shutdown"
	if reason != "" {
		via += " (" + reason + ")"
	}
	c.stopVia(graceful, timeout, via)
}

// stopVia is stopWith naming what asked.
func (c *runControl) stopVia(graceful bool, timeout time.Duration, via string) {
	c.via.CompareAndSwap(nil, &via)
	if !graceful {
		c.immediate.Store(true) // never undone by a later graceful request
	}
	if timeout > 0 {
		c.drain.Store(int64(timeout))
	}
	signalOnce(c.stop)
}

// drainContext is the context bounding the organism's shutdown.
func (c *runControl) drainContext() (context.Context, context.CancelFunc) {
	if d := c.drain.Load(); d > 0 {
		return context.WithTimeout(context.Background(), time.Duration(d))
	}
	return context.WithCancel(context.Background())
}

// Stop asks the serving loop to stop: the bus API's stop is the OOB
// shutdown's graceful mode with the pump's shutdown_timeout.
func (c *runControl) Stop(context.Context) error {
	c.stopVia(true, 0, "the bus API")
	return nil
}

// requester names what asked to stop ("" when nothing did).
func (c *runControl) requester() string {
	if v := c.via.Load(); v != nil {
		return *v
	}
	return ""
}

// Reload reloads organism.yaml in place and returns once the new
// configuration is in force, or with the reason it was refused (wrapping
// organism.ErrReloadRefused; the organism goes on unchanged).
func (c *runControl) Reload(context.Context) error {
	return c.reload("API")
}

func signalOnce(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
