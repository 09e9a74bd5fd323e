package pump

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// eraA and eraB are the payloads of the era tests' listeners.
type (
	eraA struct{ Text string }
	eraB struct{ Text string }
)

// eraPump returns a started pump with listeners a and b and profile p
// reaching a, its history journaled in j (nil: none).
func eraPump(t *testing.T, j ProfileEraJournal, opts Options) *Pump {
	t.Helper()
	opts.Logger, opts.ProfileEras = slog.New(slog.NewTextHandler(io.Discard, nil)), j
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, pt := range map[string]func(...xmlpipe.PayloadOption) (*xmlpipe.PayloadType, error){"a": xmlpipe.PayloadTypeOf[eraA], "b": xmlpipe.PayloadTypeOf[eraB]} {
		typ, err := pt()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Register(Listener{Name: name, Payload: typ, Handler: xmlpipe.HandlerFunc(
			func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SetProfiles([]ProfileDef{{Name: "p", Listeners: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

// TestProfileErasBounded: 10,000 reloads that each change a profile keep
// the history of the definitions — and the pump's memory — flat: only the
// eras a conversation refers to stay, and a conversation begun before
// them all still routes within the definition it began with.
func TestProfileErasBounded(t *testing.T) {
	j := &memEras{}
	p := eraPump(t, j, Options{})
	old := stage.NewThreadID()
	if err := p.threads.Begin(old, "client", "a"); err != nil {
		t.Fatal(err)
	}
	reload := func(i int) {
		ls := []string{"a"}
		if i%2 == 0 {
			ls = append(ls, "b") // widened
		}
		if err := p.SetProfiles([]ProfileDef{{Name: "p", Listeners: ls}}); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for i := range 1000 {
		reload(i)
	}
	before := heap()
	for i := 1000; i < 10000; i++ {
		reload(i)
	}
	after := heap()
	tbl := p.routes.Load()
	t.Logf("heap after 1000 reloads %d B, after 10000 %d B; %d eras in memory, %d journaled", before, after, len(tbl.eras), j.len())
	if n := len(tbl.eras); n > 2*minErasPruned {
		t.Errorf("after 10000 reloads the history holds %d eras, want at most %d", n, 2*minErasPruned)
	}
	if n := j.len(); n > 2*minErasPruned {
		t.Errorf("after 10000 reloads the journal holds %d eras, want at most %d", n, 2*minErasPruned)
	}
	if after > before+1<<20 {
		t.Errorf("heap grew from %d to %d bytes over 9000 reloads", before, after)
	}
	reload(0) // widened: p reaches b for conversations begun now
	tbl = p.routes.Load()
	b := tbl.lookup("b")
	if p.profileIn(tbl, old, "p").reaches(b) {
		t.Error("the conversation begun before the reloads reaches b, which its profile did not reach then")
	}
	fresh := stage.NewThreadID()
	if err := p.threads.Begin(fresh, "client", "a"); err != nil {
		t.Fatal(err)
	}
	if !p.profileIn(tbl, fresh, "p").reaches(b) {
		t.Error("a conversation begun after the widening does not reach b")
	}
}

// TestProfileErasRestart: a conversation restored after a restart routes
// within the definitions it began with, not the configuration the
// organism restarted with — whether the definitions were widened by a
// reload before the restart or in the configuration while it was down —
// and one begun after the restart gets the configuration's.
func TestProfileErasRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reload bool // the first run widens p by a reload before it stops
	}{
		{name: "widened by a reload", reload: true},
		{name: "widened while down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &memEras{}
			first := eraPump(t, j, Options{})
			old := stage.NewThreadID()
			if err := first.threads.Begin(old, "client", "a"); err != nil {
				t.Fatal(err)
			}
			if tc.reload {
				if err := first.SetProfiles([]ProfileDef{{Name: "p", Listeners: []string{"a", "b"}}}); err != nil {
					t.Fatal(err)
				}
			}
			recs := first.threads.Records()
			if err := first.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}

			threads := registry.NewThreads(registry.ThreadsConfig{})
			if err := threads.Restore(recs); err != nil {
				t.Fatal(err)
			}
			second, err := New(Options{Threads: threads, ProfileEras: j, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			for name, pt := range map[string]func(...xmlpipe.PayloadOption) (*xmlpipe.PayloadType, error){"a": xmlpipe.PayloadTypeOf[eraA], "b": xmlpipe.PayloadTypeOf[eraB]} {
				typ, err := pt()
				if err != nil {
					t.Fatal(err)
				}
				if err := second.Register(Listener{Name: name, Payload: typ, Handler: xmlpipe.HandlerFunc(
					func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })}); err != nil {
					t.Fatal(err)
				}
			}
			if err := second.SetProfiles([]ProfileDef{{Name: "p", Listeners: []string{"a", "b"}}}); err != nil {
				t.Fatal(err)
			}
			if err := second.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := second.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			}()
			tbl := second.routes.Load()
			b := tbl.lookup("b")
			if second.profileIn(tbl, old, "p").reaches(b) {
				t.Error("the conversation restored after the restart reaches b, which its profile did not reach when it began")
			}
			fresh := stage.NewThreadID()
			if err := second.threads.Begin(fresh, "client", "a"); err != nil {
				t.Fatal(err)
			}
			if !second.profileIn(tbl, fresh, "p").reaches(b) {
				t.Error("a conversation begun after the restart does not reach b")
			}
		})
	}
}
