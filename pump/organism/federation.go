package organism

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// ImportWait bounds how long assembly waits for a gateway's peer to learn
// the capabilities it imports (later they come when its link does).
var ImportWait = 3 * time.Second

// newFederation builds the gateways of cfg and registers their imports on
// p; nil when cfg has none.
func newFederation(cfg *config.Organism, opts Options, d *durable, p *pump.Pump) (*federation.Manager, error) {
	if len(cfg.Gateways) == 0 {
		return nil, nil
	}
	dataDir := cfg.Organism.DataDir
	if d != nil {
		dataDir = d.store.Dir()
	}
	key, err := keys.ReadPrivate(keys.PathsFor(dataDir, cfg.Organism.Identity).Organism)
	if err != nil {
		return nil, fmt.Errorf("organism: gateways need the organism's identity (run: xmlpipe keys init --data %s): %w", dataDir, err)
	}
	fo := federation.Options{Organism: cfg.Organism.Name, Key: key, Gateways: cfg.Gateways, Pump: p,
		Meta: opts.FederationMeta, OnLink: opts.OnLink, Logger: opts.Logger, Clock: opts.Clock}
	if d != nil {
		fo.DataDir = d.store.Dir()
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
