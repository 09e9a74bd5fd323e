package organism

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/mcpclient"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// mountMCP connects an mcp listener's external server and registers each of
// its tools as a listener <name>.<tool>; the session closes at shutdown.
func mountMCP(p *pump.Pump, env catalog.Env, lc config.Listener, where string) (*mount, error) {
	m, ls, err := connectMount(env, lc, where)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, l := range ls {
		if err := p.Register(l); err != nil {
			errs = append(errs, fmt.Errorf("%s: tool %s: %w", where, l.Name, named(err)))
		}
	}
	return m, errors.Join(errs...)
}

// connectMount connects an mcp listener's external server and returns the
// session (closed at shutdown at the latest) and a listener <name>.<tool>
// for each of its tools, not registered.
func connectMount(env catalog.Env, lc config.Listener, where string) (*mount, []pump.Listener, error) {
	mc, err := mcpclient.Connect(context.Background(), mcpclient.Options{Name: lc.Name, Command: lc.Server.Command,
		URL: lc.Server.URL, Env: lc.Server.Env, Network: lc.Server.Network.Allowed(), Timeout: lc.Server.Timeout.D(), Logger: env.Logger, Callers: env.Callers,
		Progress: env.Progress})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	m := &mount{m: mc}
	if env.AtShutdown != nil {
		env.AtShutdown(m.close)
	}
	if len(mc.Tools()) == 0 {
		return nil, nil, errors.Join(fmt.Errorf("%s: the server offers no tool that can be mounted", where), m.close())
	}
	ls := make([]pump.Listener, 0, len(mc.Tools()))
	for _, t := range mc.Tools() {
		desc := t.Description
		if desc == "" {
			desc = lc.Description
		}
		ls = append(ls, pump.Listener{Name: t.Listener, Description: desc, Payload: t.Payload, Handler: t.Handler,
			Workers: lc.MaxConcurrent, Peers: lc.Peers, Timeout: lc.Timeout.D(), Profile: lc.Profile})
		m.listeners = append(m.listeners, t.Listener)
	}
	return m, ls, nil
}

// mount is a connected mcp listener's session, closed once: when the
// listeners of its tools retire after a reload replaced or removed it, or
// at shutdown, whichever comes first.
type mount struct {
	m *mcpclient.Mount
	// listeners are the names of the tools' listeners.
	listeners []string
	once      sync.Once
	err       error
}

// names returns the names of the tools' listeners.
func (m *mount) names() []string { return append([]string(nil), m.listeners...) }

// close closes the session (once; later calls return the first result).
func (m *mount) close() error {
	m.once.Do(func() { m.err = m.m.Close() })
	return m.err
}
