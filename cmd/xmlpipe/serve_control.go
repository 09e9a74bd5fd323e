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
}

// stopWith asks the serving loop to stop, draining for at most timeout
// (0: the pump's shutdown_timeout); immediate does not drain: running
// handlers are cancelled and queued messages stay in the journal for
// recovery, waiting at most timeout for handlers that ignore the
// cancellation.
func (c *runControl) stopWith(graceful bool, timeout time.Duration, _ string) {
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
	c.stopWith(true, 0, "")
	return nil
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
