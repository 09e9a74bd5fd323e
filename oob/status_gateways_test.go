package oob

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/federation"
)

// gatewayStatuses is a federation's status, as the manager reports it.
type gatewayStatuses []federation.GatewayStatus

func (s gatewayStatuses) Status() []federation.GatewayStatus { return s }

// TestStatusListsGateways: get-status names each gateway with its peer's
// address, the link's state and since when, why it is down, the envelopes
// each way and the callers waiting — valid against privileged-msg.xsd —
// and says nothing of gateways when the organism has none.
func TestStatusListsGateways(t *testing.T) {
	up := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	down := up.Add(time.Minute)
	fed := gatewayStatuses{
		{Name: "b", RemoteURL: "wss://127.0.0.1:8767", PeerAddress: "wss://127.0.0.1:8767", Connected: true, Peer: "b",
			State: federation.LinkUp, Since: up, Queued: 1, Open: 2, Waiting: 2, EnvelopesIn: 7, EnvelopesOut: 9},
		{Name: "c", State: federation.LinkDown, Since: down, LastError: "dial tcp: connection refused"},
	}
	for _, tc := range []struct {
		name string
		fed  GatewayReporter
		want *GatewaysStatus
	}{
		{"gateways", fed, &GatewaysStatus{Count: 2, Gateways: []GatewayState{
			{Name: "b", PeerAddress: "wss://127.0.0.1:8767", Peer: "b", State: "up", Since: "2026-11-28T22:00:00Z",
				EnvelopesIn: 7, EnvelopesOut: 9, Waiting: 2, Queued: 1},
			{Name: "c", State: "down", Since: "2026-11-28T22:01:00Z", LastError: "dial tcp: connection refused"},
		}}},
		{"no federation", nil, nil},
		{"no gateways", gatewayStatuses{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Target.Federation = tc.fed })
			r := f.do(t, `<get-status/>`)
			if r.Payload.Status == nil {
				t.Fatalf("no status: %+v", r.Payload)
			}
			if d := cmp.Diff(tc.want, r.Payload.Status.Gateways); d != "" {
				t.Errorf("gateways (-want +got):\n%s", d)
			}
		})
	}
}
