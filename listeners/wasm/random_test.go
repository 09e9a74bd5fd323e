package wasm

import (
	"testing"
	"time"
)

// TestGuestRandomIsNotReplayed: a guest's random bytes (WASI random_get:
// crypto/rand, and the Go runtime's own seeds) come from the host's CSPRNG,
// so no two instances draw the same ones. wazero's default source is
// deterministic: every instance — each call of a command, the first call
// of each reactor instance, every run of the organism — got the same
// bytes, so a guest making tokens or ids made the same ones again.
func TestGuestRandomIsNotReplayed(t *testing.T) {
	draw := func(m *Module) string {
		t.Helper()
		r := runOp(t, m, "random", "", "")
		if !r.OK || len(r.Result) != 32 {
			t.Fatalf("random: %+v", r)
		}
		return r.Result
	}
	sb := Sandbox{Timeout: time.Minute}
	command := compileGuest(t, "ops", Command, sb) // one instance per call
	reactors := []*Module{compileGuest(t, "ops", Reactor, sb), compileGuest(t, "ops", Reactor, sb)}
	seen := map[string]string{}
	for _, d := range []struct{ who, got string }{
		{"command call 1", draw(command)},
		{"command call 2", draw(command)},
		{"reactor 1's first call", draw(reactors[0])},
		{"reactor 2's first call", draw(reactors[1])},
	} {
		if other, dup := seen[d.got]; dup {
			t.Errorf("%s drew %s, as %s did", d.who, d.got, other)
		}
		seen[d.got] = d.who
	}
}
