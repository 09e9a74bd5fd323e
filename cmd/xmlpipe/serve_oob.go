package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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
// runs without the channel. nil means no channel. Its shutdown calls stop,
// its reload reload.
func (r *serveRunner) startOOB(o *organism.Organism, stop oob.Stopper, reload oob.Reloader) (*oob.Server, error) {
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
		Listeners: o, Gateways: gatewayRunner{o}, Halter: o.Governance(), Reloader: reload,
		Approver: oobApprover{o.Governance()}}
	if o.Federation != nil {
		t.Federation = o.Federation
	}
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
	o.Governance().Subscribe(func(e organism.GovernanceEvent) { governanceEvent(srv, e) })
	return srv, nil
}

// governanceEvent pushes a governance event to the OOB subscribers as a
// system-event: halted, resumed, guardian-alert or approval-pending.
func governanceEvent(srv *oob.Server, e organism.GovernanceEvent) {
	switch e.Kind {
	case organism.EventHalted:
		srv.SystemEvent("halted", "the organism is halted ("+e.Scope+") by "+e.By, "")
	case organism.EventResumed:
		srv.SystemEvent("resumed", "the organism resumed, by "+e.By, "")
	case organism.EventGuardianAlert:
		a := e.Alert
		srv.SystemEvent("guardian-alert", fmt.Sprintf("%s was refused %d times within %s", a.Sender, a.Count, a.Window),
			strings.Join(a.Rules, " "))
	case organism.EventApproval:
		a := e.Approval
		srv.SystemEvent("approval-pending", fmt.Sprintf("approval %s: %s → %s waits for a human "+
			"(xmlpipe ctl decide-approval id=%s decision=approve|deny)", a.ID, a.Agent, a.Target, a.ID), a.RequestReason)
	}
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
