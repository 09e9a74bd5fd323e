package oob

import (
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// failingJournal is the fixture's store reporting a full disk.
type failingJournal struct {
	ThreadReader
	since time.Time
}

func (j failingJournal) Health() store.Health {
	return store.Health{Error: "store: commit: database or disk is full (13)", Since: j.since, Held: 3, Failures: 1}
}

// TestStatusReportsStoreHealth: get-status says whether the store's
// commits succeed, and while they fail (a full disk) since when and why,
// so the operator sees it without reading the log; the response stays
// valid against the schema.
func TestStatusReportsStoreHealth(t *testing.T) {
	f := newFixture(t, nil)
	s := f.do(t, `<get-status/>`).Payload.Status
	if s == nil || s.Store == nil {
		t.Fatalf("get-status of a durable organism: no <store> in %+v", s)
	}
	if s.Store.State != "ok" || s.Store.Error != "" {
		t.Errorf("healthy store: %+v, want state ok and no error", *s.Store)
	}

	since := time.Date(2026, 11, 29, 14, 41, 33, 0, time.UTC)
	f = newFixture(t, func(o *Options) { o.Target.Journal = failingJournal{ThreadReader: o.Target.Journal, since: since} })
	s = f.do(t, `<get-status/>`).Payload.Status
	if s == nil || s.Store == nil {
		t.Fatalf("get-status with a failing store: no <store> in %+v", s)
	}
	want := StoreStatus{State: "failing", Error: "store: commit: database or disk is full (13)",
		Since: "2026-11-29T14:41:33Z", HeldWrites: 3}
	if *s.Store != want {
		t.Errorf("failing store: %+v, want %+v", *s.Store, want)
	}
	if !strings.Contains(string(f.srv.Handle(f.sign(t, "raw-1", `<get-status/>`))), "<state>failing</state>") {
		t.Error("the XML response has no <state>failing</state> in its <store>")
	}
}
