package organism

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestHaltOnThePumpIsRecorded: a halt made on the organism's pump directly
// (o.Pump.HaltListener, beside Governance().HaltListener) is no trap: it
// is told to governance subscribers (by "pump"), and a durable organism
// keeps it across a restart; lifting it directly is recorded too. A halt
// through Governance is told once, on behalf of who made it.
func TestHaltOnThePumpIsRecorded(t *testing.T) {
	dir := t.TempDir()
	doc := `organism: {name: halts}
listeners:
  - {name: greeter, payload_class: handlers.hello.Greeting, handler: handlers.hello.handle_greeting, description: greets}
  - {name: shouter, payload_class: handlers.hello.GreetingResponse, handler: handlers.hello.handle_shout, description: shouts}
`
	opts := Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}
	o, err := New(parseIn(t, dir, doc), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []GovernanceEvent
	o.Governance().Subscribe(func(e GovernanceEvent) {
		if e.Kind == EventHalted || e.Kind == EventResumed {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	})
	if _, err := o.Pump.HaltListener("greeter"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Governance().HaltListener("alice", "shouter"); err != nil {
		t.Fatal(err)
	}
	if !o.Pump.UnhaltListener("shouter") {
		t.Fatal("shouter was not halted")
	}
	want := []GovernanceEvent{
		{Kind: EventHalted, Scope: ScopeListener, Listener: "greeter", By: directHalt},
		{Kind: EventHalted, Scope: ScopeListener, Listener: "shouter", By: "alice"},
		{Kind: EventResumed, Scope: ScopeListener, Listener: "shouter", By: directHalt},
	}
	mu.Lock()
	diff := cmp.Diff(want, events, cmpopts.IgnoreFields(GovernanceEvent{}, "Time"))
	mu.Unlock()
	if diff != "" {
		t.Errorf("governance events (-want +got):\n%s", diff)
	}
	shutdown(t, o)

	o, err = New(parseIn(t, dir, doc), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, o)
	if got := o.Governance().HaltedListeners(); !cmp.Equal(got, []string{"greeter"}) {
		t.Errorf("halted after the restart: %v, want the pump's direct halt of greeter kept", got)
	}
}
