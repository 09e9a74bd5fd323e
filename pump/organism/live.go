package organism

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// MaxLiveModuleBytes caps the module of a wasm listener added while the
// organism runs (AddListener).
const MaxLiveModuleBytes = 64 << 20

// wasmMagic opens every WebAssembly binary module.
var wasmMagic = []byte("\x00asm")

// AddListener adds lc to the organism, also while it runs
// (pump.Pump.AddListener): every conversation that starts from then on may
// reach it, while running ones keep the routing table they started with.
// The linked federation peers are told the exports may have changed (they
// ask again for their imports at once, as after a reload). The
// configuration is not changed, and a reload leaves the listener alone
// (it is not in organism.yaml; a reload whose configuration names it is
// refused): RemoveListener removes it.
//
// lc is resolved like a listeners[] entry of organism.yaml:
//   - a catalog listener: payload_class and handler named in the catalog
//     (the Python dotted names are accepted);
//   - a YAML agent (lc.YAMLAgent: agent with neither payload_class nor
//     handler): the agent loop with lc.Prompt (a prompt naming blocks of
//     the prompts: section is resolved), its model and limits defaulting
//     from the llm: and budgets: sections; refused with ErrNoLLM when no
//     usable backend serves its model;
//   - a wasm listener (type wasm): the module at lc.Module, its contract
//     from payload/xsd/payload_class or the module's describe export, in
//     the same wazero sandbox as a configured one. Because a listener
//     added at run time may come from a remote request, its files are
//     confined: a relative module, xsd or capabilities.dir is resolved
//     against the organism's directory (Config.Dir, else the working
//     directory), and each must lie inside that directory's tree after
//     symbolic links are resolved (else ErrOutsideOrganism); the module
//     must be a regular file named *.wasm, at most MaxLiveModuleBytes,
//     starting with the WebAssembly magic (else ErrNotModule), and it is
//     read through an os.Root of that directory, so what is compiled is
//     what was checked.
func (o *Organism) AddListener(lc config.Listener) error {
	if err := o.checkPeers(lc); err != nil {
		return err
	}
	lc.Peers = expandPeers(lc.Peers, o.Federation)
	lc = withTimeout(o.CurrentConfig(), lc)
	o.mu.Lock()
	layer, env := o.layer, o.env
	o.mu.Unlock()
	var err error
	switch {
	case lc.YAMLAgent():
		err = o.addAgent(layer, env, lc)
	case lc.Type == config.WasmListener:
		err = o.addWasm(env, lc)
	default:
		err = register(o.Pump, o.catalog, env, o.wasm, lc, fixedLocator(lc.Name), false, nil)
	}
	if err == nil {
		o.mu.Lock()
		o.extra[unitKey(lc.Name)] = true
		o.mu.Unlock()
		o.exportsChanged()
	}
	return err
}

// exportsChanged tells the linked federation peers that what this
// organism exports may have changed (a listener came or went while
// running), as a reload does: each asks again for what it imports.
func (o *Organism) exportsChanged() {
	if o.Federation != nil {
		o.Federation.ExportsChanged()
	}
}

// checkPeers refuses a listener whose peers name something the organism
// does not have — a listener (also one added while running), a gateway
// (also one registered while running), a mounted MCP tool, or itself — as
// organism.yaml refuses it.
func (o *Organism) checkPeers(lc config.Listener) error {
	cfg := o.CurrentConfig()
	for _, peer := range lc.Peers {
		if strings.EqualFold(peer, lc.Name) || cfg.NamesPeer(peer) {
			continue
		}
		if _, ok := o.Pump.Lookup(peer); ok {
			continue
		}
		if o.Federation != nil && slices.ContainsFunc(o.Federation.Status(), func(s federation.GatewayStatus) bool {
			return strings.EqualFold(s.Name, peer)
		}) {
			continue
		}
		return fmt.Errorf("listener %s: peers: %q names no listener or gateway: %w", lc.Name, peer, pump.ErrUnknownListener)
	}
	return nil
}

// addAgent builds a YAML agent as assembly does and adds it.
func (o *Organism) addAgent(layer *llmLayer, env catalog.Env, lc config.Listener) error {
	if err := layer.checkLiveAgent(lc); err != nil {
		return fmt.Errorf("agent %s: %w", lc.Name, err)
	}
	l, err := layer.agentListener(lc, o.Pump, o.threads, o.history, env, o.log)
	if err == nil {
		err = o.Pump.AddListener(o.gov.constituted(l, o.CurrentConfig(), lc))
	}
	if err != nil {
		return fmt.Errorf("agent %s: %w", lc.Name, named(err))
	}
	return nil
}

// addWasm confines lc's files to the organism's directory, reads the
// module and registers the listener.
func (o *Organism) addWasm(env catalog.Env, lc config.Listener) error {
	root := o.CurrentConfig().Dir()
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("wasm listener %s: the organism's directory: %w", lc.Name, err)
		}
		root = wd
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("wasm listener %s: the organism's directory: %w", lc.Name, err)
	}
	lc.Module, lc.Script = lc.ModulePath(), ""
	if lc.Module == "" {
		return fmt.Errorf("wasm listener %s: %w: no module path", lc.Name, ErrNotModule)
	}
	for _, p := range []struct {
		what string
		path *string
	}{{"module", &lc.Module}, {"xsd", &lc.XSD}, {"capabilities.dir", &lc.Capabilities.Dir}} {
		if *p.path == "" {
			continue
		}
		if *p.path, err = confine(real, root, *p.path); err != nil {
			return fmt.Errorf("wasm listener %s: %s: %w", lc.Name, p.what, err)
		}
	}
	module, err := readModule(real, lc.Module)
	if err != nil {
		return fmt.Errorf("wasm listener %s: module: %w", lc.Name, err)
	}
	return register(o.Pump, o.catalog, env, o.wasm, lc, fixedLocator(lc.Name), false, module)
}

// confine resolves p against root (relative paths) and returns it with its
// symbolic links resolved, failing with ErrOutsideOrganism unless it lies
// inside root both as written (checked first, so nothing outside is even
// looked at) and once its links are resolved (inside real, root with its
// links resolved).
func confine(real, root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if !within(root, p) && !within(real, p) { // refused before looking at it
		return "", fmt.Errorf("%w: %s", ErrOutsideOrganism, p)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if !within(real, resolved) {
		return "", fmt.Errorf("%w: %s", ErrOutsideOrganism, p)
	}
	return resolved, nil
}

// within reports whether p is dir or below it (both cleaned, absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readModule reads the module at path (inside root) through an os.Root of
// root, checking it is a regular *.wasm file of at most
// MaxLiveModuleBytes that starts with the WebAssembly magic.
func readModule(root, path string) ([]byte, error) {
	if !strings.EqualFold(filepath.Ext(path), ".wasm") {
		return nil, fmt.Errorf("%w: %s is not named *.wasm", ErrNotModule, path)
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrOutsideOrganism, path)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Opened without blocking and checked on the open file: a FIFO put in
	// the module's place after any check of the path would block the open.
	f, err := regfile.OpenIn(r, rel)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotModule, path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxLiveModuleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxLiveModuleBytes {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrNotModule, path, MaxLiveModuleBytes)
	}
	if !bytes.HasPrefix(b, wasmMagic) {
		return nil, fmt.Errorf("%w: %s does not start with the WebAssembly magic", ErrNotModule, path)
	}
	return b, nil
}

// forget drops a removed listener from what reloads know: one added while
// running is gone for good; a configured one is built again by the next
// reload (which goes back to organism.yaml).
func (o *Organism) forget(name string) {
	key := unitKey(name)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.extra[key] {
		delete(o.extra, key)
		return
	}
	for k, u := range o.units {
		for _, n := range u.names {
			if unitKey(n) == key {
				u.partial.Store(true)
				if len(u.names) == 1 {
					delete(o.units, k)
				}
				return
			}
		}
	}
}

// RemoveListener removes the listener called name and waits, bounded by
// ctx, for its running handlers (pump.Pump.RemoveListener); the linked
// federation peers are told the exports may have changed. A wasm
// listener's module is then closed. When ctx ends first the listener is
// gone from the table all the same, and its module, which handlers may
// still run, is closed at shutdown.
func (o *Organism) RemoveListener(ctx context.Context, name string) error {
	err := o.Pump.RemoveListener(ctx, name)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		o.forget(name)
		o.exportsChanged()
	}
	closeCtx := context.WithoutCancel(ctx)
	switch {
	case err == nil:
		return o.wasm.remove(closeCtx, name, true)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return errors.Join(err, o.wasm.remove(closeCtx, name, false))
	}
	return err
}
