package organism

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestUndefinedUserProfilesAreReported: a user whose profile the
// configuration does not define reaches nothing (fail closed); a start or
// a reload that leaves users so says it, once per such user, instead of
// locking them out without a word.
func TestUndefinedUserProfilesAreReported(t *testing.T) {
	const listeners = `listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
`
	const calc, greeters = "  calc: {listeners: [calculate]}\n", "  greeters: {listeners: [greeter]}\n"
	dir := t.TempDir()
	w := &warnings{}
	o, err := New(parseIn(t, dir, "organism: {name: users}\nprofiles:\n"+greeters+listeners),
		Options{DataDir: dir, Logger: slog.New(w)})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	for _, u := range []store.UserRow{{Name: "alice", Profile: "calc"}, {Name: "bob"},
		{Name: "carol", Profile: "calc&greeters"}, {Name: "dan", Profile: "greeters"}} {
		u.PasswordHash, u.Role, u.Created = "x", "operator", time.Now()
		if err := o.Store().PutUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	const warning = "a user's profile is not defined: their conversations reach none of the organism's listeners " +
		"(set another with xmlpipe users profile)"
	count := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, m := range w.msgs {
			if m == warning {
				n++
			}
		}
		return n
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name     string
		profiles string // the profiles: section reloaded ("" for the start)
		want     int    // warnings so far
	}{
		{name: "start without calc", want: 2},
		{name: "reload defining calc", profiles: "profiles:\n" + calc + greeters, want: 2},
		{name: "reload without profiles", profiles: "\n", want: 5},
	} {
		if step.profiles != "" {
			if _, err := o.Reload(parseIn(t, dir, "organism: {name: users}\n"+step.profiles+listeners)); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		if diff := cmp.Diff(step.want, count()); diff != "" {
			w.mu.Lock()
			t.Errorf("%s: warnings (-want +got):\n%s\nlog: %q", step.name, diff, slices.Clone(w.msgs))
			w.mu.Unlock()
		}
	}
}
