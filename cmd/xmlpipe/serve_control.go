package main

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// runControl is the bus's Controller in `xmlpipe run`: stop and reload
// requests are handed to the serving loop, which shuts the generation down.
type runControl struct {
	src          configSource
	stop, reload chan struct{} // buffered (1): a request is never lost, repeats collapse
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

// Reload checks that the configuration still loads, then asks the serving
// loop to start a new generation from it.
func (c *runControl) Reload(context.Context) error {
	if _, err := c.src.load(); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	signalOnce(c.reload)
	return nil
}

func signalOnce(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// reloadListener keeps the bus's listening socket open across reloads: each
// generation's server gets a view whose Close ends only that server's
// accept loop.
type reloadListener struct {
	tcp *net.TCPListener
}

// next returns the listener of a new generation.
func (l *reloadListener) next() net.Listener {
	_ = l.tcp.SetDeadline(time.Time{})
	return &generationListener{TCPListener: l.tcp}
}

// generationListener is one generation's view of the socket.
type generationListener struct {
	*net.TCPListener
	closed atomic.Bool
}

// Accept accepts until Close.
func (g *generationListener) Accept() (net.Conn, error) {
	c, err := g.TCPListener.Accept()
	if g.closed.Load() {
		if c != nil {
			c.Close()
		}
		return nil, net.ErrClosed
	}
	return c, err
}

// Close wakes a blocked Accept (through a deadline) without closing the
// socket.
func (g *generationListener) Close() error {
	g.closed.Store(true)
	return g.TCPListener.SetDeadline(time.Now())
}
