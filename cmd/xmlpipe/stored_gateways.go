package main

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// storedGateways returns the gateways the OOB channel's
// register-remote-gateway stored in the data directory as gateways[]
// entries, for those organism.yaml does not already reach (by URL): named
// remote-<host>-<port>, dialing url, trusting the stored key, importing the
// stored tags and exporting nothing. A stored entry that cannot be used is
// logged and skipped; the organism still starts.
func storedGateways(data string, cfg *config.Organism, log *slog.Logger) []config.Gateway {
	path := filepath.Join(data, gatewayStore)
	stored, err := oob.ReadGateways(path)
	if err != nil {
		log.Warn("stored gateways not read", "file", path, "error", err)
		return nil
	}
	var out []config.Gateway
	for _, s := range stored {
		g, err := storedGateway(s)
		if err == nil {
			for _, c := range append(cfg.Gateways, out...) {
				switch {
				case sameURL(c.RemoteURL, g.RemoteURL):
					err = fmt.Errorf("organism.yaml reaches it already as gateway %s", c.Name)
				case strings.EqualFold(c.Name, g.Name):
					err = fmt.Errorf("the name %s is taken", g.Name)
				}
			}
		}
		if err != nil {
			log.Warn("stored gateway skipped", "file", path, "url", s.URL, "error", err)
			continue
		}
		out = append(out, g)
	}
	return out
}

// storedGateway converts one stored register-remote-gateway.
func storedGateway(s oob.RegisterRemoteGateway) (config.Gateway, error) {
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "wss" || u.Hostname() == "" {
		return config.Gateway{}, fmt.Errorf("want a wss:// URL, got %q", s.URL)
	}
	key, err := storedIdentity(s.Identity)
	if err != nil {
		return config.Gateway{}, err
	}
	g := config.Gateway{Name: storedName(u), RemoteURL: s.URL, TrustedKey: key, Description: s.Description}
	if s.ImportTags != nil {
		g.Import = append(g.Import, s.ImportTags.Tags...)
	}
	for _, tag := range g.Import {
		if !gen.IsNCName(tag) {
			return config.Gateway{}, fmt.Errorf("import tag %q is not a payload root tag (an XML name without a prefix)", tag)
		}
	}
	return g, nil
}

// storedIdentity decodes a register-remote-gateway identity: the peer's
// raw 32-byte Ed25519 key in base64, or the base64 line between the PEM
// armour that `xmlpipe keys show` and `keys export` print (its PKIX form),
// which is what an operator has at hand.
func storedIdentity(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err == nil && len(b) == ed25519.PublicKeySize {
		return b, nil
	}
	if err == nil {
		if k, perr := x509.ParsePKIXPublicKey(b); perr == nil {
			if ek, ok := k.(ed25519.PublicKey); ok {
				return ek, nil
			}
		}
	}
	return nil, fmt.Errorf("identity: want the peer's %d-byte Ed25519 public key in base64, or the base64 line of its `xmlpipe keys export` file",
		ed25519.PublicKeySize)
}

// storedName is the name of the gateway stored for u: remote-<host>-<port>.
func storedName(u *url.URL) string {
	name := "remote-" + strings.NewReplacer(".", "-", ":", "-", "[", "", "]", "").Replace(u.Hostname())
	if p := u.Port(); p != "" {
		name += "-" + p
	}
	return name
}

// gatewayRunner starts and stops the gateways registered over the OOB
// channel in the running organism (oob.GatewayRunner).
type gatewayRunner struct {
	o *organism.Organism
}

// AddGateway starts the gateway g describes, unless organism.yaml reaches
// its peer already (as the configuration in force, reloads included,
// declares it).
func (r gatewayRunner) AddGateway(g oob.RegisterRemoteGateway) error {
	if r.o.Federation == nil {
		return errors.New("this organism has no identity for federation (run: xmlpipe keys init)")
	}
	gc, err := storedGateway(g)
	if err != nil {
		return err
	}
	for _, c := range r.o.CurrentConfig().Gateways {
		if sameURL(c.RemoteURL, gc.RemoteURL) && c.TrustedKey == nil {
			return fmt.Errorf("organism.yaml reaches it already as gateway %s", c.Name)
		}
	}
	return r.o.Federation.AddGateway(gc)
}

// RemoveGateway stops the gateway registered for url (none running: no
// error); organism.yaml's gateways are left alone.
func (r gatewayRunner) RemoveGateway(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || r.o.Federation == nil {
		return nil
	}
	if err := r.o.Federation.RemoveGateway(ctx, storedName(u)); err != nil && !errors.Is(err, federation.ErrNoGateway) {
		return err
	}
	return nil
}

// sameURL compares two gateway URLs by scheme and host.
func sameURL(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && a != "" && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}
