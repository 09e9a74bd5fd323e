package system

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Ports of the reference's tests/test_todo_registry.py::TestTodoHandlers
// (python-reference.md §11.4), with the fixes of DESIGN §8: the watcher is
// registered on the sender's own thread, not the extended one the request
// came on (Q21), and the acknowledgement answers the sender (Respond).

const (
	senderThread  = "6f1c0000-0000-4000-8000-000000000001"
	requestThread = "6f1c0000-0000-4000-8000-000000000002"
)

// lineage says requestThread was extended from senderThread.
var lineage = registry.LineageFunc(func(id string) []string {
	if id == requestThread {
		return []string{requestThread, senderThread}
	}
	return []string{id}
})

func respondPayload(t *testing.T, resp xmlpipe.Response) any {
	t.Helper()
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("response = %T, want *xmlpipe.RespondResponse", resp)
	}
	return r.Payload
}

// TestHandleTodoUntilRegistersWatcher ports
// ::test_handle_todo_until_registers_watcher: the handler answers
// TodoRegistered (wait_for as sent), and the watcher is registered, issued
// by the sender — on the sender's thread.
func TestHandleTodoUntilRegistersWatcher(t *testing.T) {
	tests := []struct {
		name       string
		lineage    registry.Lineage
		wantThread string
	}{
		{"on the sender's thread (Q21 fixed)", lineage, senderThread},
		{"no lineage: the request's thread", nil, requestThread},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := registry.NewTodoRegistry(registry.TodoConfig{})
			h := &Todo{Registry: reg, Lineage: tc.lineage}
			resp, err := h.Until(context.Background(), &TodoUntil{WaitFor: "ShoutedResponse", FromListener: "shouter",
				Description: "test watcher"}, xmlpipe.Metadata{ThreadID: requestThread, From: "greeter"})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := respondPayload(t, resp).(*TodoRegistered)
			if !ok {
				t.Fatalf("payload = %T, want *TodoRegistered", respondPayload(t, resp))
			}
			if diff := cmp.Diff(&TodoRegistered{Id: got.Id, WaitFor: "ShoutedResponse", Description: "test watcher"},
				got); diff != "" {
				t.Errorf("TodoRegistered (-want +got):\n%s", diff)
			}
			w, ok := reg.Get(got.Id)
			if !ok {
				t.Fatalf("watcher %s not registered", got.Id)
			}
			if w.ThreadID != tc.wantThread || w.Issuer != "greeter" || w.WaitFor != "shoutedresponse" ||
				w.FromListener != "shouter" || w.Raised {
				t.Errorf("watcher = %+v", w)
			}
		})
	}
}

// TestHandleTodoCompleteClosesWatcher ports
// ::test_handle_todo_complete_closes_watcher: a raised watcher closed by
// TodoComplete answers TodoClosed{WasRaised: true} and is gone; an
// unraised one answers false; an unknown id answers nothing (the
// reference logs a warning and returns None).
func TestHandleTodoCompleteClosesWatcher(t *testing.T) {
	tests := []struct {
		name  string
		raise bool
		id    func(reg *registry.TodoRegistry) string
		want  any // nil: no response
	}{
		{"raised", true, nil, &TodoClosed{WasRaised: true}},
		{"not raised", false, nil, &TodoClosed{WasRaised: false}},
		{"unknown id", false, func(*registry.TodoRegistry) string { return "nonexistent-id" }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := registry.NewTodoRegistry(registry.TodoConfig{})
			wid := reg.Register(senderThread, "greeter", "ShoutedResponse", "shouter", "waiting")
			if tc.raise {
				if n := reg.Raise(senderThread, "ShoutedResponse", "shouter", nil); n != 1 {
					t.Fatalf("raised %d watchers, want 1", n)
				}
			}
			id := wid
			if tc.id != nil {
				id = tc.id(reg)
			}
			h := &Todo{Registry: reg, Lineage: lineage, Logger: slog.New(slog.DiscardHandler)}
			resp, err := h.Complete(context.Background(), &TodoComplete{Id: id},
				xmlpipe.Metadata{ThreadID: requestThread, From: "greeter"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if resp != nil {
					t.Fatalf("response = %#v, want none", resp)
				}
				if _, ok := reg.Get(wid); !ok {
					t.Error("an unknown id closed another watcher")
				}
				return
			}
			want := tc.want.(*TodoClosed)
			want.Id = wid
			if diff := cmp.Diff(want, respondPayload(t, resp)); diff != "" {
				t.Errorf("TodoClosed (-want +got):\n%s", diff)
			}
			if _, ok := reg.Get(wid); ok {
				t.Error("watcher still registered after TodoComplete")
			}
		})
	}
}
