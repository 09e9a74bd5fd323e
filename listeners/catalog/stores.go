package catalog

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/tools/kv"
)

// Stores are the stores the tools of one organism share: one key_value
// store (kv.Store on <data>/tools.db, or in memory without a data
// directory) per data directory, with one sweeper, whatever the number of
// key_value listeners — one per agent using the tool, and the ones each
// reload builds — so that a namespace every listener's tool_config shares
// is one namespace. The store opens with its first listener and closes
// (its sweeper stopped first) when the last one is released, at shutdown.
// The organism makes one (NewStores) and gives it in every Env it builds
// listeners with.
type Stores struct {
	mu sync.Mutex
	kv map[string]*sharedKV
}

// sharedKV is one shared key_value store and its users.
type sharedKV struct {
	s *kv.Store
	// users counts the listeners holding it; at 0 it is closed.
	users int
	// stop ends the sweeper (nil: none runs) and waits for it.
	stop func()
}

// NewStores returns an organism's shared stores, none open yet.
func NewStores() *Stores { return &Stores{kv: map[string]*sharedKV{}} }

// keyValue returns the key_value store of the data directory dir ("" =
// in memory), opening it with a sweeper logging to log (sweep: whether
// one should run) if no listener holds it; release gives it back, closing
// it after the last.
func (st *Stores) keyValue(dir string, log *slog.Logger, sweep bool) (s *kv.Store, release func() error, err error) {
	if dir != "" {
		dir = filepath.Clean(dir)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	sh := st.kv[dir]
	if sh == nil {
		s, err := kv.Open(dir, nil)
		if err != nil {
			return nil, nil, err
		}
		sh = &sharedKV{s: s}
		if sweep {
			sh.stop = sweeping(s, log)
		}
		st.kv[dir] = sh
	}
	sh.users++
	var once sync.Once
	return sh.s, func() error {
		var err error
		once.Do(func() { err = st.release(dir, sh) })
		return err
	}, nil
}

// release gives back one use of sh, the store of dir: the last closes it.
func (st *Stores) release(dir string, sh *sharedKV) error {
	st.mu.Lock()
	if sh.users--; sh.users > 0 {
		st.mu.Unlock()
		return nil
	}
	if st.kv[dir] == sh {
		delete(st.kv, dir)
	}
	st.mu.Unlock()
	if sh.stop != nil {
		sh.stop() // the sweep stops before the store closes
	}
	return sh.s.Close()
}

// sweeping sweeps s's expired conversation namespaces every kv.SweepEvery
// until the function it returns is called (which waits for the sweep to
// end).
func sweeping(s *kv.Store, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		s.Sweeping(ctx, kv.SweepEvery, log)
	}()
	return func() { cancel(); <-swept }
}
