package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// testTime is the fixed clock of test organisms: uptimes and idle times are 0.
var testTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// eventTimeout bounds every wait on the organism (a failsafe, never a pause).
const eventTimeout = 10 * time.Second

// startOrganism assembles the organism build returns, starts it, waits for
// the boot conversation to complete and shuts it down when the test ends.
func startOrganism(t *testing.T, build func(organism.Options) (*organism.Organism, error)) *organism.Local {
	t.Helper()
	opts := organism.Options{Clock: func() time.Time { return testTime }, Logger: slog.New(slog.DiscardHandler)}
	l, err := organism.Assemble(opts, build)
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	p := l.Organism().Pump
	completed := make(chan string, 64)
	cancel := p.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			completed <- e.Conversation
		}
	}))
	defer cancel()
	if err := l.Organism().Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Organism().Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	timeout := time.NewTimer(eventTimeout)
	defer timeout.Stop()
	for {
		select {
		case conv := <-completed:
			if conv == l.Organism().BootThread {
				return l
			}
		case <-timeout.C:
			t.Fatalf("boot did not complete within %v", eventTimeout)
		}
	}
}

// helloWorld runs the repository's hello-world organism.yaml.
func helloWorld(t *testing.T) *organism.Local {
	return startOrganism(t, func(o organism.Options) (*organism.Organism, error) {
		return organism.Load("testdata/organism.yaml", o)
	})
}

// Echo is the payload of the test listeners.
type Echo struct {
	Text string
}

// Pick carries an enumerated choice: anything else fails payload validation.
type Pick struct {
	Choice string `enum:"red|green"`
}

// Count has no field a line of text can go in.
type Count struct {
	N int
}

// Pair has several fields, of several kinds: the console sends it as JSON or XML.
type Pair struct {
	A string
	B int
	C []string `xml:",omitempty"`
	D *bool    `xml:",omitempty"`
}

// Gate holds the test's gate listener until the test releases it.
type Gate struct {
	Note string
}

// testCatalog is the built-in catalog plus echo (responds), fail (errors),
// pick (strict payload), counter (no text field), pair (several fields) and
// gate (waits for release, then responds).
func testCatalog(release <-chan struct{}) *catalog.Catalog {
	c := catalog.Builtin()
	c.AddPayload(catalog.Payload{Name: "test.Echo", Type: reflect.TypeFor[Echo]()})
	c.AddPayload(catalog.Payload{Name: "test.Pick", Type: reflect.TypeFor[Pick]()})
	c.AddPayload(catalog.Payload{Name: "test.Gate", Type: reflect.TypeFor[Gate]()})
	c.AddPayload(catalog.Payload{Name: "test.Count", Type: reflect.TypeFor[Count]()})
	c.AddPayload(catalog.Payload{Name: "test.Pair", Type: reflect.TypeFor[Pair]()})
	c.AddHandler(catalog.Handler{Name: "test.Pair", Takes: reflect.TypeFor[Pair](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Pair, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				d := "absent"
				if p.D != nil {
					d = fmt.Sprint(*p.D)
				}
				return xmlpipe.Respond(&Echo{Text: fmt.Sprintf("A=%q B=%d C=%q D=%s", p.A, p.B, p.C, d)}), nil
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Echo", Takes: reflect.TypeFor[Echo](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Echo, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Respond(&Echo{Text: "echo: " + p.Text}), nil
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Fail", Takes: reflect.TypeFor[Echo](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Echo, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, errors.New("refusing " + p.Text)
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Pick", Takes: reflect.TypeFor[Pick](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(context.Context, *Pick, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Count", Takes: reflect.TypeFor[Count](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(context.Context, *Count, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
		}})
	c.AddHandler(catalog.Handler{Name: "test.Gate", Takes: reflect.TypeFor[Gate](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Gate, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				<-release
				return xmlpipe.Respond(&Echo{Text: "opened: " + p.Note}), nil
			})
		}})
	return c
}

const testOrganismYAML = `organism:
  name: console-test
listeners:
  - name: echo
    payload_class: test.Echo
    handler: test.Echo
    description: Responds with the text
    broadcast: true
  - name: fail
    payload_class: test.Echo
    handler: test.Fail
    description: Always fails
    broadcast: true
  - name: pick
    payload_class: test.Pick
    handler: test.Pick
    description: Takes red or green
  - name: gate
    payload_class: test.Gate
    handler: test.Gate
    description: Waits for the test
  - name: counter
    payload_class: test.Count
    handler: test.Count
    description: Counts
  - name: pair
    payload_class: test.Pair
    handler: test.Pair
    description: Takes several fields
`

// testOrganism runs the echo/fail/pick/gate organism; the gate handler
// returns once release is closed.
func testOrganism(t *testing.T, release <-chan struct{}) *organism.Local {
	return startOrganism(t, func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("console-test.yaml", []byte(testOrganismYAML))
		if err != nil {
			return nil, err
		}
		o.Catalog = testCatalog(release)
		return organism.New(cfg, o)
	})
}

var hexID = regexp.MustCompile(`\b[0-9a-f]{8}\b`)

// normalizeIDs replaces short thread ids by <t1>, <t2>, … in order of first
// appearance, so transcripts with random UUIDs compare with golden files.
func normalizeIDs(s string) string {
	seen := map[string]string{}
	return hexID.ReplaceAllStringFunc(s, func(id string) string {
		if n, ok := seen[id]; ok {
			return n
		}
		n := fmt.Sprintf("<t%d>", len(seen)+1)
		seen[id] = n
		return n
	})
}
