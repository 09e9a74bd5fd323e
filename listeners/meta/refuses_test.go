package meta

import (
	"errors"
	"testing"
)

// TestServiceRefusesAgreesWithAnswer checks Refuses against Answer: a core
// listener is refused exactly when Answer refuses its question about a
// capability the caller may see.
func TestServiceRefusesAgreesWithAnswer(t *testing.T) {
	cat := testCatalog(t)
	with := func(f func(*Flags)) Flags { fl := allOpen(); f(&fl); return fl }
	flags := map[string]Flags{
		"all open":            allOpen(),
		"disabled":            with(func(f *Flags) { f.Enabled = false }),
		"list off":            with(func(f *Flags) { f.AllowListCapabilities = false }),
		"schema admin":        with(func(f *Flags) { f.SchemaRequests = AccessAdmin }),
		"example none":        with(func(f *Flags) { f.ExampleRequests = AccessNone }),
		"prompt unknown":      with(func(f *Flags) { f.PromptRequests = "everyone" }),
		"remote allowed":      with(func(f *Flags) { f.AllowRemote = true }),
		"remote, schema none": with(func(f *Flags) { f.AllowRemote = true; f.SchemaRequests = AccessNone }),
	}
	callers := []Caller{anonymous, user, admin, peer}
	questions := map[string]any{
		NameRequestSchema:    &RequestSchema{Capability: "adder"},
		NameRequestExample:   &RequestExample{Capability: "adder"},
		NameRequestPrompt:    &RequestPrompt{Capability: "adder"},
		NameListCapabilities: &ListCapabilities{},
	}
	for fname, fl := range flags {
		s := NewService(fl, cat)
		for _, c := range callers {
			for name, q := range questions {
				_, err := s.Answer(c, q)
				if err != nil && !errors.Is(err, ErrRefused) {
					t.Fatalf("%s, %s, %s: Answer error %v", fname, c.Name, name, err)
				}
				if got, want := s.Refuses(c, name), err != nil; got != want {
					t.Errorf("%s: Refuses(%s, %s) = %v, but Answer says %v", fname, c.Name, name, got, err)
				}
			}
		}
	}
}

func TestServiceRefusesOnlyCoreListeners(t *testing.T) {
	s := NewService(Flags{}, testCatalog(t)) // meta disabled: every core listener refused
	for _, name := range []string{"adder", "core", "core.other", "system.boot"} {
		if s.Refuses(anonymous, name) {
			t.Errorf("Refuses(%q) = true for a listener that is no core listener", name)
		}
	}
	if !s.Refuses(admin, NameListCapabilities) {
		t.Errorf("Refuses(%q) = false with meta disabled", NameListCapabilities)
	}
}
