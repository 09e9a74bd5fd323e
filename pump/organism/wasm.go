package organism

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/tetratelabs/wazero"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// wasmSet holds the organism's WASM listeners and their shared compilation
// cache (on disk in the data directory, so a restart does not recompile).
type wasmSet struct {
	cache     wazero.CompilationCache
	ownCache  bool
	listeners []*wasm.Listener
}

func newWasmSet(opts Options, d *durable) *wasmSet {
	if opts.WasmCache != nil {
		return &wasmSet{cache: opts.WasmCache}
	}
	if d != nil {
		if c, err := wazero.NewCompilationCacheWithDir(filepath.Join(d.store.Dir(), "wasm-cache")); err == nil {
			return &wasmSet{cache: c, ownCache: true}
		} else {
			opts.Logger.Warn("wasm: no compilation cache on disk; compiling in memory", "error", err)
		}
	}
	return &wasmSet{cache: wazero.NewCompilationCache(), ownCache: true}
}

// open compiles a wasm listener's module and resolves its contract.
func (s *wasmSet) open(cat *catalog.Catalog, env catalog.Env, lc config.Listener) (*xmlpipe.PayloadType, xmlpipe.Handler, error) {
	c := lc.Capabilities
	o := wasm.Options{
		Name:   lc.Name,
		Module: lc.ModulePath(),
		Sandbox: wasm.Sandbox{MemoryMB: c.MemoryMB, Timeout: c.Timeout.D(), Dir: c.Dir, DirWritable: c.DirWritable,
			Env: c.Env, Instances: c.Instances, MaxOutputBytes: c.MaxOutputBytes},
		Payload:  fieldsOf(lc.Payload),
		XSD:      lc.XSD,
		Response: fieldsOf(lc.Response),
		Cache:    s.cache,
		Logger:   env.Logger,
	}
	if lc.PayloadClass != "" && lc.Payload.IsZero() && lc.XSD == "" {
		pt, err := cat.PayloadType(lc.PayloadClass)
		if err != nil {
			return nil, nil, fmt.Errorf("payload_class: %w", err)
		}
		o.PayloadType = pt
	}
	l, err := wasm.Open(context.Background(), o)
	if err != nil {
		return nil, nil, err
	}
	s.listeners = append(s.listeners, l)
	return l.Payload(), l, nil
}

func fieldsOf(f config.FieldList) wasm.Fields {
	out := wasm.Fields{Root: f.Root}
	for _, fd := range f.Fields {
		out.Fields = append(out.Fields, wasm.Field{Name: fd.Name, Type: fd.Type, Doc: fd.Doc, Optional: fd.Optional, Enum: fd.Enum})
	}
	return out
}

// close releases every module and the cache the organism made.
func (s *wasmSet) close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, l := range s.listeners {
		errs = append(errs, l.Close(ctx))
	}
	s.listeners = nil
	if s.ownCache && s.cache != nil {
		errs = append(errs, s.cache.Close(ctx))
		s.cache = nil
	}
	return errors.Join(errs...)
}
