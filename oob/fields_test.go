package oob

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOperationFields(t *testing.T) {
	tests := []struct {
		op   string
		want []string
		ok   bool
	}{
		{"shutdown", []string{"mode", "reason", "timeout-seconds"}, true},
		{"halt", []string{"scope", "listener", "reason"}, true},
		{"kill-thread", []string{"thread-id", "reason"}, true},
		{"cancel-thread", []string{"thread-id", "reason"}, true},
		{"resume", []string{"listener", "reason"}, true},
		{"reload", []string{"reason"}, true},
		{"list-listeners", []string{"detailed", "team"}, true},
		{"inject-message", []string{"to", "thread-id", "from", "payload"}, true},
		{"register-remote-gateway", []string{"url", "identity", "import-tags", "description", "team", "max-concurrent"}, true},
		{"get-status", []string{"include-listeners", "include-threads", "include-metrics"}, true},
		{"ack", nil, false},
		{"reboot", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			got, ok := OperationFields(tc.op)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Fatalf("OperationFields(%q) = %v, %v; want %v, %v", tc.op, got, ok, tc.want, tc.ok)
			}
		})
	}
	n := 0
	for _, op := range []string{"shutdown", "register-listener", "unregister-listener", "list-listeners", "get-listener-schema",
		"inject-message", "get-thread-history", "subscribe-thread", "unsubscribe", "get-organism-graph", "get-status",
		"set-config", "get-config", "register-remote-gateway", "unregister-remote-gateway"} {
		if _, ok := OperationFields(op); ok {
			n++
		}
	}
	if n != 15 {
		t.Fatalf("%d of the 15 operations known", n)
	}
}

// TestOperationNames: every operation of privileged-msg.xsd, in the
// schema's order, each one OperationFields knows.
func TestOperationNames(t *testing.T) {
	want := []string{"shutdown", "halt", "resume", "reload", "register-listener", "unregister-listener", "list-listeners",
		"get-listener-schema", "inject-message", "get-thread-history", "subscribe-thread", "unsubscribe", "kill-thread",
		"cancel-thread", "list-approvals", "decide-approval", "get-organism-graph", "get-status", "set-config", "get-config",
		"register-remote-gateway", "unregister-remote-gateway"}
	got := OperationNames()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("OperationNames (-want +got):\n%s", diff)
	}
	for _, op := range got {
		if _, ok := OperationFields(op); !ok {
			t.Errorf("OperationFields does not know %s", op)
		}
	}
}
