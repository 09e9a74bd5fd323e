package federation

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestEmptySchemaAnswerNamed: a peer that lists a capability but answers
// its schema question with no schema gets an error saying so — not one
// ending in "<nil>" — and its other export is imported all the same.
func TestEmptySchemaAnswerNamed(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	meta := &exportsMeta{}
	c.m.opts.Meta = meta
	meta.set(imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD("")},
		imported{Tag: "Shout", Name: "shout", Description: "shouts"})

	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Store: openStore(t, t.TempDir(), log),
		BackoffBase: 10 * time.Millisecond,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key),
			Import: []string{"Echo", "Shout"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("caller log:\n%s", logs.String())
		}
	})
	refreshed := make(chan error, 8)
	m.onRefresh = func(_ string, err error) {
		select {
		case refreshed <- err:
		default:
		}
	}
	m.Start()
	select {
	case err := <-refreshed:
		if err == nil || !strings.Contains(err.Error(), "schema of shout: the peer answered no schema") ||
			strings.Contains(err.Error(), "<nil>") {
			t.Fatalf("refresh: %v, want the empty schema named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the imports were not refreshed")
	}
	if _, ok := p.Lookup("echo"); !ok {
		t.Fatal("the good export was not imported beside the one without a schema")
	}
}
