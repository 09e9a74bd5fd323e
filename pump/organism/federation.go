package organism

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/meta"
	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// ImportWait bounds how long assembly waits for a gateway's peer to learn
// the capabilities it imports (later they come when its link does).
var ImportWait = 3 * time.Second

// newFederation builds the gateways of cfg and registers their imports on
// p. A durable organism with an identity gets a federation manager even
// without gateways, so gateways can be added while it runs (OOB
// register-remote-gateway); nil when there is neither.
func newFederation(cfg *config.Organism, opts Options, d *durable, p *pump.Pump, late *gatewayAgents,
	notify func(thread, from, text string)) (*federation.Manager, error) {
	dataDir := cfg.Organism.DataDir
	if d != nil {
		dataDir = d.store.Dir()
	}
	if err := checkTrustedIdentities(cfg); err != nil {
		return nil, err
	}
	key, err := keys.ReadPrivate(keys.PathsFor(dataDir, cfg.Organism.Identity).Organism)
	if err != nil {
		if len(cfg.Gateways) == 0 {
			return nil, nil // no identity, no gateways: no federation
		}
		return nil, fmt.Errorf("organism: gateways need the organism's identity (run: xmlpipe keys init --data %s): %w", dataDir, err)
	}
	if len(cfg.Gateways) == 0 && d == nil {
		return nil, nil // gateways added while running need a data directory for their outbox
	}
	fo := federation.Options{Organism: cfg.Organism.Name, Key: key, Gateways: cfg.Gateways, Pump: p,
		OnLink: opts.OnLink, Observer: opts.GatewayObserver, Traces: opts.GatewayTraces, Logger: opts.Logger, Clock: opts.Clock,
		Notify: notify}
	fo.OnImport = func(gw, listener string) {
		for _, agent := range late.of(gw) {
			if err := p.AddPeers(agent, listener); err != nil {
				opts.Logger.Warn("federation: import not added to an agent's peers", "agent", agent, "listener", listener, "error", err)
			}
		}
	}
	if cfg.Meta.Enabled {
		ma, err := newMetaAnswerer(cfg, p)
		if err != nil {
			return nil, err
		}
		fo.Meta = ma
	}
	if d != nil {
		fo.Store = d.store // the federation state shares the journal's group commits
	}
	if h, ok := opts.Journal.(pump.ThreadHistory); ok {
		fo.Known = func(thread string) (bool, error) {
			_, seen, err := h.ThreadOrigin(thread)
			return seen, err
		}
	}
	if fo.OnLink == nil {
		log := opts.Logger
		fo.OnLink = func(event, gw, detail string) {
			log.Info(event, slog.String("gateway", gw), slog.String("detail", detail))
		}
	}
	m, err := federation.New(fo)
	if err != nil {
		return nil, err
	}
	if err := m.Prepare(context.Background(), ImportWait); err != nil {
		opts.Logger.Warn("federation: some imports are not available yet", "error", err)
	}
	return m, nil
}

// callerNotice is the federation's Notify: a line about a caller's call
// to an imported listener (its peer unreachable) reaches the caller as the
// listener's printed line (print: the console, /ws) and as interim text
// (an Ask's WithInterim, the MCP server's progress), as an agent's interim
// text does.
func callerNotice(print func(thread, from, text string), org *orgRef, log *slog.Logger) func(thread, from, text string) {
	return func(thread, from, text string) {
		if o := org.p.Load(); o != nil {
			o.interims.show(o.Pump.Threads(), log, from, thread, text)
		}
		if print != nil {
			print(thread, from, text)
		}
	}
}

// checkTrustedIdentities reads the trusted_identity of every gateway of
// cfg, as a reload does (planGateways), so that one missing or unreadable
// is refused with its file:line like any other configuration error, at
// xmlpipe validate as at start.
func checkTrustedIdentities(cfg *config.Organism) error {
	var errs []error
	for i, g := range cfg.Gateways {
		if g.TrustedIdentity == "" || len(g.TrustedKey) > 0 {
			continue // a key registered over OOB, or none (config.Validate names it)
		}
		if _, err := keys.ReadPublic(g.TrustedIdentity); err != nil {
			path := fmt.Sprintf("gateways[%d].trusted_identity", i)
			errs = append(errs, fmt.Errorf("%s: %s: gateway %s: %w%s", cfg.Pos(path), path, g.Name, err,
				cfg.WorkdirHint(g.TrustedIdentity)))
		}
	}
	return errors.Join(errs...)
}

// expandPeers replaces a gateway's name in a peers list by the listeners
// standing for its imports ("peers: [b]" allows everything b imports).
func expandPeers(peers []string, m *federation.Manager) []string {
	if m == nil {
		return peers
	}
	imports := map[string][]string{}
	for _, s := range m.Status() {
		imports[strings.ToLower(s.Name)] = s.Imports
	}
	var out []string
	for _, p := range peers {
		if names, ok := imports[strings.ToLower(p)]; ok {
			for _, n := range names {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// metaAnswerer answers federation peers' meta questions with the
// organism's meta service: a peer is an authenticated, remote caller that
// sees only the capabilities of the root tags its gateway exports.
type metaAnswerer struct {
	svc    *meta.Service
	schema *stage.Schema
	types  []*xmlpipe.PayloadType
	p      *pump.Pump
}

func newMetaAnswerer(cfg *config.Organism, p *pump.Pump) (*metaAnswerer, error) {
	s, err := stage.CompileSchema([]byte(schemas.Meta()), "mem:/schemas/meta.xsd")
	if err != nil {
		return nil, err
	}
	types, err := meta.PayloadTypes()
	if err != nil {
		return nil, err
	}
	return &metaAnswerer{svc: meta.NewService(metaFlags(cfg.Meta), pumpCatalog{p}), schema: s, types: types, p: p}, nil
}

// errMetaRefused is the one text a peer gets for any refused question.
var errMetaRefused = errors.New("no such capability, or the question is not allowed")

// AnswerRemote implements federation.MetaAnswerer.
func (m *metaAnswerer) AnswerRemote(gateway, grant string, exported func(string) bool, question []byte) ([]byte, error) {
	if err := m.schema.Validate(question); err != nil {
		return nil, fmt.Errorf("not a meta question: %w", err)
	}
	ns, name := rootOf(question)
	var q any
	for _, pt := range m.types {
		if pt.Namespace() == ns && pt.Name() == name {
			v, err := pt.Decode(question)
			if err != nil {
				return nil, fmt.Errorf("not a meta question: %w", err)
			}
			q = v
			break
		}
	}
	if q == nil {
		return nil, errMetaRefused
	}
	// grant is the profile the gateway's calls run under: what it may see.
	// A capability whose root's local name is exported is visible also
	// when its root is qualified — only unqualified roots cross a gateway,
	// so the peer cannot call it, but its list names the namespace, and the
	// peer importing the tag says why it cannot rather than that nothing
	// exports it.
	caller := meta.Caller{Name: gateway, Authenticated: true, Remote: true, Visible: func(c meta.Capability) bool {
		return c.Payload != nil && exported(c.Payload.Name()) && (grant == "" || m.p.ProfileReaches(grant, c.Name))
	}}
	ans, err := m.svc.Answer(caller, q)
	if err != nil {
		return nil, errMetaRefused
	}
	fp, ok := ans.(xmlpipe.FixedPayload)
	if !ok {
		return nil, fmt.Errorf("meta: answer %T has no schema", ans)
	}
	pt, err := fp.PayloadType()
	if err != nil {
		return nil, err
	}
	return pt.AppendPayload(nil, ans)
}

// rootOf is the root element's namespace and local name ("" when b has
// none).
func rootOf(b []byte) (ns, name string) {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return "", ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Space, se.Name.Local
		}
	}
}

// gatewayAgents remembers which agents name which gateways in their peers,
// to give them an import learnt after start.
type gatewayAgents struct {
	mu sync.Mutex
	m  map[string][]string // lower-cased gateway name → agents
}

// note records lc when it is an agent whose peers name a gateway of cfg.
func (a *gatewayAgents) note(lc config.Listener, cfg *config.Organism) {
	if !lc.Agent {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range lc.Peers {
		if _, ok := cfg.Gateway(p); ok {
			if a.m == nil {
				a.m = map[string][]string{}
			}
			a.m[strings.ToLower(p)] = append(a.m[strings.ToLower(p)], lc.Name)
		}
	}
}

// of lists the agents whose peers name gateway gw.
func (a *gatewayAgents) of(gw string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.m[strings.ToLower(gw)]...)
}
