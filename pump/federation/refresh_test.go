package federation

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// exportsMeta answers a peer's list-capabilities and request-schema from
// the capabilities it is set to export, as an organism's meta does.
type exportsMeta struct {
	mu   sync.Mutex
	caps []imported
}

func (f *exportsMeta) set(caps ...imported) {
	f.mu.Lock()
	f.caps = caps
	f.mu.Unlock()
}

func escaped(s []byte) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, s)
	return b.String()
}

func (f *exportsMeta) AnswerRemote(_, _ string, _ func(string) bool, q []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b bytes.Buffer
	switch {
	case bytes.Contains(q, []byte("<list-capabilities")):
		b.WriteString("<capabilities>")
		for _, c := range f.caps {
			b.WriteString("<capability><name>" + c.Name + "</name><description>" + escaped([]byte(c.Description)) +
				"</description><root-tag>" + c.Tag + "</root-tag><namespace></namespace></capability>")
		}
		b.WriteString("</capabilities>")
	case bytes.Contains(q, []byte("<request-schema")):
		var rs struct {
			Capability string `xml:"capability"`
		}
		if err := xml.Unmarshal(q, &rs); err != nil {
			return nil, err
		}
		for _, c := range f.caps {
			if c.Name == rs.Capability {
				b.WriteString("<schema-answer><schema>" + escaped(c.XSD) + "</schema></schema-answer>")
				return b.Bytes(), nil
			}
		}
		return nil, errors.New("no such capability")
	default:
		return nil, errors.New("not asked in this test")
	}
	return b.Bytes(), nil
}

// echoXSD is the schema of Echo, with more elements after Text.
func echoXSD(more string) []byte {
	return []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" id="Echo" elementFormDefault="qualified">
  <xs:complexType name="Echo">
    <xs:sequence>
      <xs:element name="Text" type="xs:string"/>` + more + `
    </xs:sequence>
  </xs:complexType>
  <xs:element name="Echo" type="Echo"/>
</xs:schema>
`)
}

// TestImportsRefreshedOnLinkUp: the peer's exports change while the link
// is down (it restarted with a new schema for an exported tag, and stopped
// exporting another): the next link replaces the imported listener whose
// schema changed — a call open on the old one still gets its answer — and
// removes the one the peer no longer exports, and the list remembered for
// the next start is the refreshed one.
func TestImportsRefreshedOnLinkUp(t *testing.T) {
	aKey, dir := newKey(t), t.TempDir()
	hold := make(chan struct{})
	held := true
	defer func() {
		if held {
			close(hold)
		}
	}()
	c := newCalleeHolding(t, aKey, hold)
	meta := &exportsMeta{}
	c.m.opts.Meta = meta
	c.mu.Lock()
	c.entered = make(chan string, 1)
	c.mu.Unlock()
	v1 := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD("")}
	v2 := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD(`
      <xs:element name="Loud" type="xs:boolean" minOccurs="0"/>`)}
	shout := imported{Tag: "Shout", Name: "shout", Description: "shouts", XSD: []byte(strings.ReplaceAll(string(echoXSD("")), "Echo", "Shout"))}
	meta.set(v1, shout)

	log := slog.New(slog.NewTextHandler(c.logs, nil)).With("side", "caller")
	p := callerPump(t, log, nil)
	st := openStore(t, dir, log)
	m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, Store: st, BackoffBase: 10 * time.Millisecond,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key),
			Import: []string{"Echo", "Shout"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	refreshed := make(chan error, 8)
	m.onRefresh = func(_ string, err error) { refreshed <- err }
	m.Start()
	waitRefresh := func() error {
		t.Helper()
		select {
		case err := <-refreshed:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("the imports were not refreshed")
			return nil
		}
	}
	if err := waitRefresh(); err != nil {
		t.Fatalf("first link: %v", err)
	}
	schemaOf := func(name string) string {
		t.Helper()
		l, ok := p.Lookup(name)
		if !ok {
			return ""
		}
		return string(l.Payload.XSD())
	}
	if schemaOf("echo") != string(v1.XSD) || schemaOf("shout") == "" {
		t.Fatalf("first link imported echo %q, shout %q", schemaOf("echo"), schemaOf("shout"))
	}

	// An agent naming the import: what it is told of echo follows it.
	peersSeen := make(chan []xmlpipe.Peer, 1)
	ept, err := xmlpipe.PayloadTypeOf[Echoed]()
	if err != nil {
		t.Fatal(err)
	}
	err = p.AddListener(pump.Listener{Name: "planner", Description: "plans", Payload: ept, Agent: true, Peers: []string{"echo"},
		Handler: xmlpipe.HandlerFunc(func(_ context.Context, _ any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
			peersSeen <- md.Peers
			return nil, nil
		})})
	if err != nil {
		t.Fatal(err)
	}

	// A call open on the old listener when the peer's exports change.
	old, _ := p.Lookup("echo")
	payload, err := old.Payload.Decode([]byte(`<Echo><Text>open</Text></Echo>`))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   xmlpipe.Response
		err error
	}
	answered := make(chan result, 1)
	go func() {
		r, err := old.Handler.Handle(context.Background(), payload, callMetadata())
		answered <- result{r, err}
	}()
	<-c.entered

	meta.set(v2)
	m.gateways[0].mu.Lock()
	link := m.gateways[0].conn
	m.gateways[0].mu.Unlock()
	link.close(errors.New("the peer restarted"))
	if err := waitRefresh(); err == nil || !strings.Contains(err.Error(), "<Shout>") {
		t.Fatalf("second link: %v, want the withdrawn Shout named", err)
	}
	if d := cmp.Diff(string(v2.XSD), schemaOf("echo")); d != "" {
		t.Errorf("echo's schema after the peer changed it (-want +got):\n%s", d)
	}
	if s := schemaOf("shout"); s != "" {
		t.Errorf("shout is still a listener after the peer stopped exporting it")
	}
	if _, err := p.SendEnvelope(context.Background(), pump.Envelope{From: "console", To: "planner",
		Payload: []byte(`<Echoed xmlns=""><Text>plan</Text></Echoed>`)}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case peers := <-peersSeen:
		if len(peers) != 1 || peers[0].Payload == nil || string(peers[0].Payload.XSD()) != string(v2.XSD) {
			t.Errorf("the agent naming echo is told of it %+v, want its new schema", peers)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent was not reached")
	}
	saved, err := m.db.loadImports("b")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]imported{v2}, saved); d != "" {
		t.Errorf("imports remembered for the next start (-want +got):\n%s", d)
	}
	if got := m.Status()[0].Imports; !cmp.Equal(got, []string{"echo"}) {
		t.Errorf("status lists the imports %q, want [echo]", got)
	}

	held = false
	close(hold)
	select {
	case res := <-answered:
		if res.err != nil {
			t.Fatalf("the call open across the refresh: %v", res.err)
		}
		rr, ok := res.r.(*xmlpipe.RespondResponse)
		if !ok {
			t.Fatalf("the call open across the refresh answered %T", res.r)
		}
		if text, _ := stage.PayloadText(rr.Payload); text != "OPEN" {
			t.Fatalf("the call open across the refresh answered %#v", rr.Payload)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call open across the refresh got no answer")
	}
}
