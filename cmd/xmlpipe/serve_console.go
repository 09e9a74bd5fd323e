package main

import (
	"context"
	"fmt"
	"time"

	"github.com/xml-pipeline/xmlpipe/oob"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// consoleServe is the main bus of `xmlpipe console --serve`: the same bus
// as `xmlpipe run` serves (users required unless --insecure-dev, the
// certificate fingerprint announced), on the console's organism, for the
// console's lifetime. POST /api/v1/organism/stop ends the console; POST
// /api/v1/organism/reload reloads organism.yaml in place, as xmlpipe run
// does. SIGHUP does not reload: to a console it is its terminal hanging up.
type consoleServe struct {
	r     *serveRunner
	setup busSetup
	bus   *mainBus
	oob   *oob.Server
}

// prepare checks the users and opens the certificate and the socket, before
// the organism starts.
func (c *consoleServe) prepare(ctx context.Context, o *organism.Organism) error {
	setup, err := c.r.prepareBus(ctx, o)
	if err != nil {
		return err
	}
	c.setup = setup
	return nil
}

// start serves the bus on the started organism; a stop request through the
// API calls stop.
func (c *consoleServe) start(local *organism.Local, stop context.CancelFunc) error {
	reload := func(via string) error { return c.r.reload(local.Organism(), via) }
	mb, err := c.r.startBus(local, c.setup, consoleControl{stop: stop, reload: reload})
	if err != nil {
		return err
	}
	c.bus = mb
	// An OOB shutdown ends the console like a stop through the API (the
	// drain is the pump's shutdown_timeout: mode and timeout-seconds are
	// honoured by xmlpipe run only).
	srv, err := c.r.startOOB(local.Organism(), oob.StopperFunc(func(bool, time.Duration, string) { stop() }),
		oob.ReloaderFunc(func(string) error { return reload("OOB") }))
	if err != nil {
		if serr := c.shutdown(); serr != nil {
			err = fmt.Errorf("%w (and closing the bus: %w)", err, serr)
		}
		return err
	}
	c.oob = srv
	return nil
}

// shutdown closes the bus's sockets and waits for it.
func (c *consoleServe) shutdown() error {
	if err := stopOOB(c.oob); err != nil {
		c.r.log.Error("OOB shutdown", "error", err)
	}
	c.oob = nil
	if c.bus == nil {
		return nil
	}
	mb := c.bus
	c.bus = nil
	return mb.shutdown()
}

// close releases the listening socket (after shutdown).
func (c *consoleServe) close() {
	if c.r.ln != nil {
		_ = c.r.ln.Close()
	}
}

// consoleControl is the bus's Controller in the console: stop ends the
// console session (and so the process); reload reloads organism.yaml in
// place (serveRunner.reload), as in xmlpipe run.
type consoleControl struct {
	stop context.CancelFunc
	// reload reloads the organism in place, naming what asked for it.
	reload func(via string) error
}

// Stop ends the console session.
func (c consoleControl) Stop(context.Context) error {
	c.stop()
	return nil
}

// Reload reloads organism.yaml in place and returns once the new
// configuration is in force, or with the reason it was refused (wrapping
// organism.ErrReloadRefused; the organism goes on unchanged).
func (c consoleControl) Reload(context.Context) error {
	return c.reload("API")
}
