package organism

import (
	"context"
	"errors"
	"fmt"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/mcpclient"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// mountMCP connects an mcp listener's external server and registers each of
// its tools as a listener <name>.<tool>; the session closes at shutdown.
func mountMCP(p *pump.Pump, env catalog.Env, lc config.Listener, where string) error {
	m, err := mcpclient.Connect(context.Background(), mcpclient.Options{Name: lc.Name, Command: lc.Server.Command,
		URL: lc.Server.URL, Env: lc.Server.Env, Timeout: lc.Server.Timeout.D(), Logger: env.Logger, Callers: env.Callers})
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if env.AtShutdown != nil {
		env.AtShutdown(m.Close)
	}
	if len(m.Tools()) == 0 {
		return fmt.Errorf("%s: the server offers no tool that can be mounted", where)
	}
	var errs []error
	for _, t := range m.Tools() {
		desc := t.Description
		if desc == "" {
			desc = lc.Description
		}
		l := pump.Listener{Name: t.Listener, Description: desc, Payload: t.Payload, Handler: t.Handler,
			Workers: lc.MaxConcurrent, Peers: lc.Peers, Timeout: lc.Timeout.D()}
		if err := p.Register(l); err != nil {
			errs = append(errs, fmt.Errorf("%s: tool %s: %w", where, t.Listener, err))
		}
	}
	return errors.Join(errs...)
}
