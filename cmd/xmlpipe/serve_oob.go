package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// oobShutdownTimeout bounds closing the OOB channel's connections.
const oobShutdownTimeout = 5 * time.Second

// gatewayStore is the file, in the data directory, where
// register-remote-gateway stores gateways for federation.
const gatewayStore = "oob-gateways.json"

// startOOB serves the OOB channel of the started organism when oob.enabled
// and the owner key exists; without the key it says how to create one and
// runs without the channel. nil means no channel.
func (r *serveRunner) startOOB(o *organism.Organism, stop oob.Stopper) (*oob.Server, error) {
	cfg := o.Config
	if !cfg.OOB.Enabled {
		return nil, nil
	}
	data := dataDir(cfg, r.data)
	owner, err := keys.OwnerPublic(keys.PathsFor(data, cfg.Organism.Identity))
	if errors.Is(err, keys.ErrNoKeys) {
		r.log.Warn("the OOB channel is off: no owner key (create one with: xmlpipe keys init" + r.flags + ")")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t := oob.Target{Pump: o.Pump, Config: cfg, CurrentConfig: o.CurrentConfig, Stopper: stop, LogLevel: r.level,
		GatewayFile: filepath.Join(data, gatewayStore), ListenerFile: filepath.Join(data, listenerStore),
		Listeners: o, Gateways: gatewayRunner{o}}
	if r.oobReplay == nil {
		r.oobReplay = oob.NewReplayCache(0)
	}
	if st := o.Store(); st != nil {
		t.Journal = st
		// and across restarts: accepted signatures are kept in the store
		// until they leave the freshness window.
		if err := r.oobReplay.Persist(context.Background(), st, time.Now()); err != nil {
			return nil, err
		}
	}
	srv, err := oob.New(oob.Options{Config: cfg.OOB, Owner: owner, Target: t, Logger: r.log, Replay: r.oobReplay})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	if o.Federation != nil {
		o.Federation.Watch(func(event, gw, detail string) {
			srv.SystemEvent(event, "gateway "+gw, detail)
		})
	}
	return srv, nil
}

// stopOOB closes the channel (nil: none).
func stopOOB(srv *oob.Server) error {
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), oobShutdownTimeout)
	defer cancel()
	return srv.Shutdown(ctx)
}
