package registry

import (
	"testing"

	"github.com/google/uuid"
)

func TestOrigin(t *testing.T) {
	th := newTestThreads(newFakeClock(), nil)
	root := mustBegin(t, th, "websocket:alice", "greeter")
	child := mustExtend(t, th, root, "shouter")
	grandchild := mustExtend(t, th, child, "response-handler")
	broadcast := mustBegin(t, th, "api:bob", "")
	member := mustExtend(t, th, broadcast, "greeter")
	restored := uuid.NewString()
	if err := th.Restore([]ThreadRecord{{ID: restored, Path: []string{testOrganism}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id   string
		wantSender string
		wantOK     bool
	}{
		{"root", root, "websocket:alice", true},
		{"child", child, "websocket:alice", true},
		{"grandchild", grandchild, "websocket:alice", true},
		{"broadcast root", broadcast, "api:bob", true},
		{"broadcast member", member, "api:bob", true},
		{"one-segment root", restored, "", true},
		{"unknown", uuid.NewString(), "", false},
		{"not a uuid", "not-a-thread", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := th.Origin(tt.id)
			if got != tt.wantSender || ok != tt.wantOK {
				t.Errorf("Origin(%s) = %q, %v; want %q, %v", tt.id, got, ok, tt.wantSender, tt.wantOK)
			}
		})
	}
	if err := th.End(root); err != nil {
		t.Fatal(err)
	}
	if got, ok := th.Origin(child); ok {
		t.Errorf("Origin of an ended thread = %q, true", got)
	}
}
