package organism

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// pythonEnvelope is a Greeting to greeter on thread as Python's
// ElementTree writes it: the envelope namespace on the prefix ns0.
func pythonEnvelope(thread, name string) []byte {
	return []byte(`<ns0:message xmlns:ns0="https://xml-pipeline.org/ns/envelope/v1"><ns0:meta>` +
		`<ns0:from>console</ns0:from><ns0:to>greeter</ns0:to><ns0:thread>` + thread + `</ns0:thread></ns0:meta>` +
		`<Greeting><Name>` + name + `</Name></Greeting></ns0:message>`)
}

// injectRaw injects env and waits for its conversation to complete,
// returning the thread the pump gave it.
func injectRaw(t *testing.T, o *Organism, env []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	thread, err := o.Pump.InjectWait(ctx, env, pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			close(done)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%s never completed", env)
	}
	return thread
}

// TestPrefixedEnvelopeJournalPaths: a greeting in a prefixed envelope (as a
// Python client writes it) is journaled as it came, and every reader of the
// journal shows its payload, not the whole envelope: the journal view's
// payload column (plain SQL, as sqlite3 reads it), the console's /monitor
// history and a replay's inputs — and the replay re-enters the
// conversation's thread with the second prefixed greeting, as the
// recording did.
func TestPrefixedEnvelopeJournalPaths(t *testing.T) {
	dir := t.TempDir()
	o, _ := startDurableHello(t, dir, nil)
	conv := injectRaw(t, o, pythonEnvelope("not-a-uuid", "Dan"))
	injectRaw(t, o, pythonEnvelope(conv, "Eve"))
	shutdown(t, o)

	const dan, eve = `<Greeting><Name>Dan</Name></Greeting>`, `<Greeting><Name>Eve</Name></Greeting>`
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT payload FROM journal WHERE conversation = ? AND root = 'Greeting' ORDER BY seq`, conv)
	if err != nil {
		t.Fatal(err)
	}
	var greetings []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		greetings = append(greetings, p)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{dan, eve}, greetings); d != "" {
		t.Errorf("journal view's Greeting payloads (-want +got):\n%s", d)
	}

	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hist, err := journalMonitor(r, conv)
	if err != nil {
		t.Fatal(err)
	}
	var monitored []string
	for _, h := range hist {
		for _, s := range h.Slots {
			if s.PayloadType == "Greeting" {
				monitored = append(monitored, s.Payload)
			}
		}
	}
	if d := cmp.Diff([]string{dan, eve}, monitored); d != "" {
		t.Errorf("/monitor's Greeting payloads (-want +got):\n%s", d)
	}

	recorded, err := r.Conversation(conv)
	if err != nil {
		t.Fatal(err)
	}
	rep := replay(t, helloConfig(t, nil), recorded)
	var inputs []string
	for _, in := range rep.Inputs {
		inputs = append(inputs, string(in.Payload))
	}
	if d := cmp.Diff([]string{dan, eve}, inputs); d != "" {
		t.Errorf("replay's input payloads (-want +got):\n%s", d)
	}
	if !rep.Identical() || len(rep.Conversations) != 1 {
		t.Errorf("replay identical %v, conversations %v; want one identical conversation, steps %+v",
			rep.Identical(), rep.Conversations, viewSteps(rep.Steps))
	}
}
