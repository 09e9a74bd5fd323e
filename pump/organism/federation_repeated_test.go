package organism

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Collect is what organism B's collect listener takes: a repeated element.
type Collect struct {
	Arg   []string `doc:"the values, in order"`
	Label string
	// Count is optional: given as 0, it must reach B as 0, not as absent.
	Count *int64
}

// Collected is its answer: the label and the values joined by "|".
type Collected struct {
	Text string
}

// Nested is a payload no imported listener can stand for (a nested
// element), exported beside Collect.
type Nested struct {
	Inner struct {
		X string
	}
}

// syncLog is a log sink the test reads while the organism writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFederatedRepeatedElement: B exports a listener whose payload repeats
// an element (and one A cannot import); A, on a brand-new data
// directory, imports the first — the one it cannot import is logged by
// its element and keeps nothing else out — and a call with several values,
// from Go and from an agent's tool call, reaches B with all of them, in
// their order; an optional value given as 0 reaches B as 0.
func TestFederatedRepeatedElement(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	var mu sync.Mutex
	var got [][]string
	var counts []string
	collect := Func("collect", "Collects values", func(_ context.Context, c *Collect, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		mu.Lock()
		got = append(got, c.Arg)
		count := "absent"
		if c.Count != nil {
			count = fmt.Sprint(*c.Count)
		}
		counts = append(counts, count)
		mu.Unlock()
		return xmlpipe.Respond(&Collected{Text: c.Label + ":" + strings.Join(c.Arg, "|")}), nil
	})
	nested := Func("nested", "Takes a nested element", func(context.Context, *Nested, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, nil
	})
	cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: tools-b}
meta: {allow_remote: true}
gateways:
  - {name: a, trusted_identity: %s, export: [Collect, Nested]}
`, a.pub))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startFed(t, cfgB, b, Options{Listeners: []Listener{collect, nested}}, true)

	m := newScriptedModel(t, map[string][]string{
		"gatherer": {toolCalls(scriptedCall{"c1", "collect", `{"Arg":["z","a","m"],"Label":"agent"}`}), "Collected."},
	})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfgA, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: agents-a}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: gatherer, agent: true, description: Gathers values, prompt: You are gatherer., peers: [b]}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [Collect, Nested]}
`, m.URL, addr, b.pub))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncLog{}
	orgA, _ := startFed(t, cfgA, a, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, false)
	waitImport(t, orgA, "collect")
	if l, _ := orgA.Pump.Lookup("gatherer"); !slices.Contains(l.Peers, "collect") {
		t.Fatalf("gatherer's peers lack the imported collect: %v", l.Peers)
	}
	if !strings.Contains(logs.String(), "Nested.Inner") {
		t.Errorf("the export A cannot import is not logged by its element:\n%s", logs.String())
	}

	l, _ := orgA.Pump.Lookup("collect")
	v, err := l.Payload.Decode([]byte(`<Collect><Arg>3</Arg><Arg>1</Arg><Arg>2</Arg><Label>go</Label><Count>0</Count></Collect>`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := orgA.Ask(ctx, "collect", v)
	if err != nil {
		t.Fatalf("Ask collect: %v", err)
	}
	if ev.Kind != pump.EventReply || !bytes.Contains(ev.Envelope, []byte("<Text>go:3|1|2</Text>")) {
		t.Errorf("answer %s %s, want B's Collected go:3|1|2", ev.Kind, ev.Envelope)
	}

	if got := ask(t, orgA, "gatherer", "gather z, a and m"); got != "Collected." {
		t.Fatalf("gatherer replied %q", got)
	}
	reqs := m.requests("gatherer")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if tools := jsonOf(reqs[0].Body["tools"]); !strings.Contains(tools, `"Arg":{"items":{"type":"string"},"type":"array"}`) {
		t.Errorf("the imported tool's repeated element is not offered as an array:\n%s", tools)
	}
	if result := reqs[1].Messages[len(reqs[1].Messages)-1]; !strings.Contains(result["content"], "agent:z|a|m") {
		t.Errorf("B's answer did not reach the agent: %q", result)
	}
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([][]string{{"3", "1", "2"}, {"z", "a", "m"}}, got); d != "" {
		t.Errorf("values B received (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"0", "absent"}, counts); d != "" {
		t.Errorf("the optional Count B received (-want +got):\n%s", d)
	}
}
