package organism

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// get returns the module of the registered wasm listener name (nil: none).
func (s *wasmSet) get(name string) *wasm.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[strings.ToLower(name)]
}

// swap records the modules a reload built, by listener name, in place of
// those of the listeners it replaced or removed (retiring), which are kept
// until released (release) or shutdown. After close it closes the new
// modules and fails with pump.ErrClosed.
func (s *wasmSet) swap(added map[string]*wasm.Listener, retiring []string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		var errs []error
		for _, l := range added {
			errs = append(errs, l.Close(context.Background()))
		}
		return errors.Join(fmt.Errorf("wasm: %w", pump.ErrClosed), errors.Join(errs...))
	}
	for _, name := range retiring {
		key := strings.ToLower(name)
		if l, ok := s.byName[key]; ok {
			s.retired = append(s.retired, l)
			delete(s.byName, key)
		}
	}
	for name, l := range added {
		s.byName[strings.ToLower(name)] = l
	}
	s.mu.Unlock()
	return nil
}

// release closes a retired module no handler can run any more, unless
// close already did.
func (s *wasmSet) release(ctx context.Context, l *wasm.Listener) error {
	s.mu.Lock()
	i := slices.Index(s.retired, l)
	if i >= 0 {
		s.retired = slices.Delete(s.retired, i, i+1)
	}
	s.mu.Unlock()
	if i < 0 {
		return nil
	}
	return l.Close(ctx)
}
