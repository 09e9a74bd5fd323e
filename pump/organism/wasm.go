package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// wasmSet holds the organism's WASM listeners and their shared compilation
// cache (on disk in the data directory, so a restart does not recompile).
// Listeners are added and removed while the organism runs, so the set is
// guarded by mu.
type wasmSet struct {
	cache    wazero.CompilationCache
	ownCache bool

	mu sync.Mutex
	// byName are the registered listeners' modules, by lower-case name.
	byName map[string]*wasm.Listener
	// retired are modules of listeners removed while handlers may still
	// run them (a removal that timed out): closed at shutdown.
	retired []*wasm.Listener
	// closed is set by close: no module is kept after it.
	closed bool
	// dataDirs are the organism's data directories, which no guest may
	// see (see guard).
	dataDirs []string
}

// guard records the organism's data directories — where its keys,
// journal, SQLite files and certificates live — so that open refuses a
// capabilities.dir equal to one, inside one or containing one. Empty
// names are skipped.
func (s *wasmSet) guard(dirs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range dirs {
		if d != "" {
			s.dataDirs = append(s.dataDirs, d)
		}
	}
}

// checkDir refuses a capabilities.dir that overlaps a data directory
// (ErrDataDirOverlap).
func (s *wasmSet) checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	s.mu.Lock()
	dataDirs := s.dataDirs
	s.mu.Unlock()
	for _, d := range dataDirs {
		if overlaps(dir, d) {
			return fmt.Errorf("capabilities.dir %s %w %s (its keys, journal and certificates): give the guest a directory of its own",
				dir, ErrDataDirOverlap, d)
		}
	}
	return nil
}

// overlaps reports whether directories a and b are the same or one lies
// inside the other: as written (made absolute), once the symbolic links of
// their existing part are resolved, or as the same directory found twice
// (a bind mount).
func overlaps(a, b string) bool {
	for _, x := range pathForms(a) {
		for _, y := range pathForms(b) {
			if within(x, y) || within(y, x) {
				return true
			}
		}
	}
	sa, erra := os.Stat(a)
	sb, errb := os.Stat(b)
	return erra == nil && errb == nil && os.SameFile(sa, sb)
}

// pathForms returns p made absolute, and the same with the symbolic links
// of its longest existing prefix resolved.
func pathForms(p string) []string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return []string{filepath.Clean(p)}
	}
	rest := ""
	for cur := abs; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return []string{abs, filepath.Join(real, rest)}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return []string{abs}
		}
		rest, cur = filepath.Join(filepath.Base(cur), rest), parent
	}
}

func newWasmSet(opts Options, d *durable) *wasmSet {
	if opts.WasmCache != nil {
		return &wasmSet{cache: opts.WasmCache, byName: map[string]*wasm.Listener{}}
	}
	if d != nil {
		if c, err := wazero.NewCompilationCacheWithDir(filepath.Join(d.store.Dir(), "wasm-cache")); err == nil {
			return &wasmSet{cache: c, ownCache: true, byName: map[string]*wasm.Listener{}}
		} else {
			opts.Logger.Warn("wasm: no compilation cache on disk; compiling in memory", "error", err)
		}
	}
	return &wasmSet{cache: wazero.NewCompilationCache(), ownCache: true, byName: map[string]*wasm.Listener{}}
}

// open compiles a wasm listener's module — module when not nil (bytes the
// caller read and checked), else the file at lc's module path — and
// resolves its contract. A capabilities.dir overlapping a data directory
// is refused first (checkDir). The caller adds the listener to the set once it is
// registered (add), or closes it.
func (s *wasmSet) open(cat *catalog.Catalog, env catalog.Env, lc config.Listener, module []byte) (*wasm.Listener, error) {
	c := lc.Capabilities
	if err := s.checkDir(c.Dir); err != nil {
		return nil, err
	}
	s.mu.Lock()
	cache := s.cache
	s.mu.Unlock()
	o := wasm.Options{
		Name:   lc.Name,
		Module: lc.ModulePath(),
		Wasm:   module,
		Sandbox: wasm.Sandbox{MemoryMB: c.MemoryMB, Timeout: c.Timeout.D(), Dir: c.Dir, DirWritable: c.DirWritable,
			MaxDiskBytes: c.MaxDiskBytes, Env: c.Env, Instances: c.Instances, MaxOutputBytes: c.MaxOutputBytes},
		Payload:  fieldsOf(lc.Payload),
		XSD:      lc.XSD,
		Response: fieldsOf(lc.Response),
		Cache:    cache,
		Logger:   env.Logger,
	}
	if lc.PayloadClass != "" && lc.Payload.IsZero() && lc.XSD == "" {
		pt, err := cat.PayloadType(lc.PayloadClass)
		if err != nil {
			return nil, &wasm.OptionError{Key: "payload_class", Err: err}
		}
		o.PayloadType = pt
	}
	return wasm.Open(context.Background(), o)
}

// add records the module of the registered listener name. After close (a
// registration that raced the shutdown) it closes the module instead and
// returns an error wrapping pump.ErrClosed.
func (s *wasmSet) add(name string, l *wasm.Listener) error {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.byName[strings.ToLower(name)] = l
	}
	s.mu.Unlock()
	if closed {
		return errors.Join(fmt.Errorf("wasm listener %s: %w", name, pump.ErrClosed), l.Close(context.Background()))
	}
	return nil
}

// recountDisks counts the writable dirs of the registered listeners afresh
// for their disk quotas (files added or removed by hand included), each
// unless a guest writing there runs, when its count is kept (see
// wasm.Module.RecountDisk). A failed count is logged and the count kept.
func (s *wasmSet) recountDisks(log *slog.Logger) {
	s.mu.Lock()
	ls := make(map[string]*wasm.Listener, len(s.byName))
	maps.Copy(ls, s.byName)
	s.mu.Unlock()
	for name, l := range ls {
		recounted, err := l.Module().RecountDisk()
		switch {
		case err != nil:
			log.Warn("wasm: the dir's disk quota was not recounted; the count is kept", "listener", name, "err", err)
		case !recounted && l.Module().Sandbox().DirWritable:
			log.Info("wasm: a guest writing to the dir runs; its disk quota count is kept", "listener", name)
		}
	}
}

// remove forgets the module of the removed listener name and closes it;
// when idle is false (handlers may still run it) the module is kept for
// close instead. It does nothing for a listener that is not a wasm one.
func (s *wasmSet) remove(ctx context.Context, name string, idle bool) error {
	s.mu.Lock()
	l, ok := s.byName[strings.ToLower(name)]
	delete(s.byName, strings.ToLower(name))
	if ok && !idle {
		s.retired = append(s.retired, l)
	}
	s.mu.Unlock()
	if !ok || !idle {
		return nil
	}
	if err := l.Close(ctx); err != nil {
		return fmt.Errorf("wasm listener %s: close: %w", name, err)
	}
	return nil
}

// fieldsOf is the contract organism.yaml wrote, as the WASM listener takes
// it (one type: config.FieldList is fields.List, as is wasm.Fields), copied
// so the listener never shares the config's slices.
func fieldsOf(f config.FieldList) wasm.Fields {
	out := wasm.Fields{Root: f.Root, Fields: make([]wasm.Field, len(f.Fields))}
	for i, fd := range f.Fields {
		fd.Enum = append([]string(nil), fd.Enum...)
		out.Fields[i] = fd
	}
	return out
}

// close releases every module and the cache the organism made.
func (s *wasmSet) close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	ls := s.retired
	for _, l := range s.byName {
		ls = append(ls, l)
	}
	s.byName, s.retired, s.closed = map[string]*wasm.Listener{}, nil, true
	cache := s.cache
	if s.ownCache {
		s.cache = nil
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Close(ctx))
	}
	if s.ownCache && cache != nil {
		errs = append(errs, cache.Close(ctx))
	}
	return errors.Join(errs...)
}
