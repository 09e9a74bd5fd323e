package organism

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestKillIsFinalWithoutJournal: an organism with a data directory but
// its journal disabled still keeps a kill in its store (as it keeps its
// threads): after a restart the killed conversation reads killed, a
// continuation of it is refused with ErrContinueKilled, and a new
// conversation runs.
func TestKillIsFinalWithoutJournal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	noJournal := func(c *config.Organism) { c.Journal.Enabled = false }
	o, _ := startDurableHello(t, dir, noJournal)
	if err := o.Pump.Pause("greeter"); err != nil {
		t.Fatal(err)
	}
	conv, err := o.Pump.Send(ctx, "console", "greeter", &hello.Greeting{Name: "held"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := o.Pump.Kill(conv); err != nil || got != conv {
		t.Fatalf("Kill = %q, %v; want %q, nil", got, err, conv)
	}
	if err := o.ShutdownNow(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}

	o, _ = startDurableHello(t, dir, noJournal)
	defer shutdown(t, o)
	if killed, err := o.Pump.WasKilled(conv); !killed || err != nil {
		t.Errorf("WasKilled after a restart = %v, %v; want true", killed, err)
	}
	_, err = o.Pump.SendEnvelope(ctx, pump.Envelope{From: "console", To: "greeter", Thread: conv,
		Payload: []byte(`<Greeting xmlns=""><Name>again</Name></Greeting>`)}, nil)
	if !errors.Is(err, pump.ErrContinueKilled) {
		t.Errorf("continuing the killed conversation after a restart: %v, want ErrContinueKilled", err)
	}
	converse(t, o, "new")
}
