package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// viewPayloadEnvelopes are journaled envelopes whose payload the journal
// view cuts in SQL as stage.EnvelopePayload does in Go.
var viewPayloadEnvelopes = []string{
	`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from><thread>t</thread></meta><Greeting xmlns=""><Name>Dan</Name></Greeting></message>`,
	// Python's ElementTree: the envelope namespace on ns0.
	`<ns0:message xmlns:ns0="https://xml-pipeline.org/ns/envelope/v1"><ns0:meta><ns0:from>a</ns0:from><ns0:thread>t</ns0:thread></ns0:meta><Greeting><Name>Dan</Name></Greeting></ns0:message>`,
	`<env:message xmlns:env="https://xml-pipeline.org/ns/envelope/v1"><env:meta><env:from>a</env:from></env:meta><p:P xmlns:p="urn:p"><p:meta>x</p:meta></p:P></env:message>`,
	// A payload named like the envelope's elements.
	`<ns0:message xmlns:ns0="https://xml-pipeline.org/ns/envelope/v1"><ns0:meta><ns0:from>a</ns0:from></ns0:meta><message><meta></meta></message></ns0:message>`,
	// A foreign element called meta inside <meta>, text that names tags.
	`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from><x:meta xmlns:x="urn:x">1</x:meta></meta><P xmlns=""><q a="&lt;/message>">&lt;/meta></q></P></message>`,
	// Blanks between the elements; a multi-byte name.
	"<message xmlns=\"https://xml-pipeline.org/ns/envelope/v1\">\n <meta><from>a</from></meta>\n <Grüße xmlns=\"\">é</Grüße>\n</message>",
	// Not envelopes: shown whole.
	`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from></meta></message>`,
	`not XML`,
	`<x>`,
}

// TestJournalViewPayloadAgrees: the journal view's payload column is the
// payload xmlpipe reads (stage.EnvelopePayload; the envelope itself when it
// has none) — also for a prefixed envelope, which the view showed whole.
func TestJournalViewPayloadAgrees(t *testing.T) {
	s, dir := openTest(t, Options{})
	ctx := context.Background()
	var want, got []string
	for _, env := range viewPayloadEnvelopes {
		e := testEntry(0, "th-view")
		e.Bytes = []byte(env)
		seq, err := s.AppendSync(ctx, e)
		must(t, err)
		p, ok := stage.EnvelopePayload(e.Bytes)
		if !ok {
			p = e.Bytes
		}
		want = append(want, string(p))
		var payload string
		must(t, rawDB(t, dir).QueryRow(`SELECT payload FROM journal WHERE seq = ?`, seq).Scan(&payload))
		got = append(got, payload)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("journal view's payloads (-stage.EnvelopePayload +SQL):\n%s", d)
	}
}

// TestJournalViewRecreatedAtOpen: a database whose journal view an earlier
// build created reads with the current definition after the next Open.
func TestJournalViewRecreatedAtOpen(t *testing.T) {
	s, dir := openTest(t, Options{})
	e := testEntry(1, "th-old")
	e.Bytes = []byte(viewPayloadEnvelopes[1])
	_, err := s.AppendSync(context.Background(), e)
	must(t, err)
	must(t, s.Close())
	db := rawDB(t, dir)
	_, err = db.Exec(`DROP VIEW journal; CREATE VIEW journal AS SELECT seq, envelope AS payload FROM journal_entries`)
	must(t, err)
	must(t, db.Close())

	openAt(t, dir, Options{})
	var payload string
	must(t, rawDB(t, dir).QueryRow(`SELECT payload FROM journal WHERE thread = 'th-old'`).Scan(&payload))
	if want := `<Greeting><Name>Dan</Name></Greeting>`; payload != want {
		t.Errorf("payload after reopening = %s, want %s", payload, want)
	}
}
