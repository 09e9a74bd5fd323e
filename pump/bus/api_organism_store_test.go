package bus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestOrganismReportsStoreHealth: GET /api/v1/organism says whether the
// store's commits succeed ("store": {"state": "ok"}), and while they fail
// (a full disk) since when and why, as get-status's <store> does.
func TestOrganismReportsStoreHealth(t *testing.T) {
	f := newFixture(t)
	status, org, _ := f.do("GET", "/api/v1/organism", f.tokens()[auth.Operator], nil)
	if status != 200 {
		t.Fatalf("GET /api/v1/organism: %d", status)
	}
	if diff := cmp.Diff(map[string]any{"state": "ok"}, org["store"]); diff != "" {
		t.Errorf("store of a healthy organism (-want +got):\n%s", diff)
	}

	since := time.Date(2026, 11, 29, 14, 41, 33, 0, time.UTC)
	got := storeBodyOf(store.Health{Error: "store: commit: database or disk is full (13)", Since: since, Held: 7, Failures: 1})
	want := &apiStoreBody{State: "failing", Error: "store: commit: database or disk is full (13)",
		Since: "2026-11-29T14:41:33Z", HeldWrites: 7}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store while commits fail (-want +got):\n%s", diff)
	}
}
