package organism

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// fedSide is one organism of a federation test: its data directory (with
// keys) and its public identity file.
type fedSide struct {
	dir, pub string
}

func newFedSide(t *testing.T) fedSide {
	t.Helper()
	dir := t.TempDir()
	p := keys.PathsFor(dir, "")
	if _, err := keys.Init(p); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "identity.pub")
	if err := keys.Export(p, pub); err != nil {
		t.Fatal(err)
	}
	return fedSide{dir: dir, pub: pub}
}

func fedLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startFed assembles and starts cfg as a durable organism in side's data
// directory; serve also serves its federation endpoint over TLS and
// returns the wss:// address.
func startFed(t *testing.T, cfg *config.Organism, side fedSide, opts Options, serve bool) (*Organism, string) {
	t.Helper()
	opts.DataDir = side.dir
	if opts.Logger == nil {
		opts.Logger = fedLogger()
	}
	o, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	addr := ""
	var srv *httptest.Server
	if serve {
		srv = httptest.NewUnstartedServer(o.Federation.Handler())
		srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
		srv.StartTLS()
		addr = "wss" + strings.TrimPrefix(srv.URL, "https")
	}
	t.Cleanup(func() {
		if srv != nil {
			srv.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Errorf("shutdown %s: %v", cfg.Organism.Name, err)
		}
	})
	return o, addr
}

// waitImport waits until o has the listener name (an import registered
// when its link came up).
func waitImport(t *testing.T, o *Organism, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if _, ok := o.Pump.Lookup(name); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never imported %s; gateways %+v", o.Config.Organism.Name, name, o.Federation.Status())
		}
	}
}

// loadFedConfig loads one of testdata/federation's organisms with its
// gateway's trusted identity (and remote URL) replaced.
func loadFedConfig(t *testing.T, name, trusted, remote string) *config.Organism {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "testdata", "federation", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gateways[0].TrustedIdentity = trusted
	if cfg.Gateways[0].RemoteURL != "" {
		cfg.Gateways[0].RemoteURL = remote
	}
	return cfg
}

// TestFederatedHelloWorld is the README's walkthrough: organism A has no
// greeter and imports Greeting through gateway b; `@greeter Dan` in A is
// greeted and shouted by B, whose shouter calls A's printer back over the
// same link, so A prints HELLO, DAN! computed by B.
func TestFederatedHelloWorld(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{}, true)
	out := &printed{ch: make(chan string, 4)}
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a, Options{Env: catalog.Env{Print: out.print}}, false)
	waitImport(t, orgB, "response-handler")
	greeter, ok := orgA.Pump.Lookup("greeter")
	if !ok || !strings.Contains(greeter.Description, "via b") {
		t.Fatalf("A has no imported greeter: %+v", greeter)
	}
	greetAcross(t, orgA, orgB, out)
}

// TestFederatedStartKeepsItsLink: the link A makes while it is assembled,
// to fetch its imports, is the one that carries its calls once started —
// B sees one inbound link, not one for the imports and another after
// Start (a second handshake, and the meta questions B asked on the first
// lost with it).
func TestFederatedStartKeepsItsLink(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	logB, err := os.Create(filepath.Join(t.TempDir(), "b.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logB.Close()
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b,
		Options{Logger: slog.New(slog.NewTextHandler(logB, nil))}, true)
	events := make(chan string, 16)
	cancel := orgB.Federation.Watch(func(event, gw, _ string) { events <- event + " " + gw })
	defer cancel()
	out := &printed{ch: make(chan string, 4)}
	orgA, _ := startFed(t, loadFedConfig(t, "a.yaml", b.pub, addr), a, Options{Env: catalog.Env{Print: out.print}}, false)
	if _, ok := orgA.Pump.Lookup("greeter"); !ok {
		t.Fatal("A was started without the import it fetched at assembly")
	}
	waitImport(t, orgB, "response-handler")
	greetAcross(t, orgA, orgB, out)
	var got []string
	for len(events) > 0 {
		got = append(got, <-events)
	}
	if want := []string{"gateway-connected a"}; !slices.Equal(got, want) {
		t.Fatalf("B's link events %q, want %q", got, want)
	}
	// B's question about A's exports, asked on that link before A
	// started, waited for A's start: its first answer was the right one.
	if logged, err := os.ReadFile(logB.Name()); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(logged), "imports not available yet") {
		t.Errorf("B had to ask A for its imports again:\n%s", logged)
	}
}

// TestFederatedAssembledNeverStarted: an organism assembled (its imports
// fetched over a link) but never started — as `xmlpipe validate` does —
// closes that link when it shuts down, leaving no goroutine behind
// (goleak checks the package).
func TestFederatedAssembledNeverStarted(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	orgB, addr := startFed(t, loadFedConfig(t, "b.yaml", a.pub, ""), b, Options{}, true)
	events := make(chan string, 16)
	cancel := orgB.Federation.Watch(func(event, gw, _ string) { events <- event + " " + gw })
	defer cancel()
	orgA, err := New(loadFedConfig(t, "a.yaml", b.pub, addr), Options{DataDir: a.dir, Logger: fedLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := orgA.Pump.Lookup("greeter"); !ok {
		t.Fatal("A was assembled without the import it fetched")
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := orgA.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gateway-connected a", "gateway-disconnected a"} {
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("B's link event %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("B never saw %q", want)
		}
	}
}

// TestFederatedAgentCallsRemoteTool: a YAML agent in A whose peers name
// gateway b sees B's calculate tool (imported, its schema fetched by meta
// introspection) in its usage instructions, calls it by its real element
// names, and gets B's answer back as data in its conversation.
func TestFederatedAgentCallsRemoteTool(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: tools-b}
meta: {allow_remote: true}
listeners:
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
gateways:
  - name: a
    trusted_identity: %s
    export: [Calculate]
`, a.pub))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startFed(t, cfgB, b, Options{}, true)
	cfgA, m := mathbotSide(t, addr, b.pub)
	orgA, _ := startFed(t, cfgA, a, Options{}, false)
	if l, _ := orgA.Pump.Lookup("mathbot"); !slices.Contains(l.Peers, "calculate") {
		t.Fatalf("peers [b] did not expand to b's imports: %v", l.Peers)
	}
	if got := ask(t, orgA, "mathbot", "what is six times seven?"); got != "The answer is 42." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("mathbot")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if tools := jsonOf(reqs[0].Body["tools"]); !strings.Contains(tools, `"name":"calculate"`) || !strings.Contains(tools, `"Expression"`) {
		t.Errorf("the imported tool is not offered as a function with its schema:\n%s", tools)
	}
	if result := reqs[1].Messages[len(reqs[1].Messages)-1]; result["role"] != "tool" || result["tool_call_id"] != "c1" ||
		!strings.Contains(result["content"], `"Value":"42"`) || strings.Contains(result["content"], "<") {
		t.Errorf("B's answer did not reach the agent as the call's result, in the JSON form of a local tool's: %q", result)
	}
}

// TestFederatedImportLearntLate: organism A starts while its peer is down
// (nothing remembered); when B comes up, A imports its calculate tool and
// the agent whose peers name the gateway is given it — peers, and the
// function its model is offered — so its next question reaches B.
func TestFederatedImportLearntLate(t *testing.T) {
	a, b := newFedSide(t), newFedSide(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // B is down when A starts
	cfgA, m := mathbotSide(t, "wss://"+addr, b.pub)
	orgA, _ := startFed(t, cfgA, a, Options{}, false)
	if l, _ := orgA.Pump.Lookup("calculate"); l.Handler != nil {
		t.Fatal("calculate imported while B was down")
	}

	cfgB, err := config.Parse("b.yaml", fmt.Appendf(nil, `organism: {name: tools-b}
meta: {allow_remote: true}
listeners:
  - {name: calculate, payload_class: tools.Calculate, handler: tools.Calculate, description: Evaluates arithmetic}
gateways:
  - {name: a, trusted_identity: %s, export: [Calculate]}
`, a.pub))
	if err != nil {
		t.Fatal(err)
	}
	orgB, _ := startFed(t, cfgB, b, Options{}, false)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: orgB.Federation.Handler()}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	deadline := time.Now().Add(15 * time.Second)
	for {
		var peers []string
		for _, l := range orgA.Pump.Listeners() {
			if l.Name == "mathbot" {
				peers = l.Peers
			}
		}
		if slices.Contains(peers, "calculate") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mathbot's peers %v never gained calculate; gateways %+v", peers, orgA.Federation.Status())
		}
		time.Sleep(20 * time.Millisecond) // polling A's listeners for the import
	}
	if got := ask(t, orgA, "mathbot", "what is six times seven?"); got != "The answer is 42." {
		t.Fatalf("reply %q", got)
	}
	if tools := jsonOf(m.requests("mathbot")[0].Body["tools"]); !strings.Contains(tools, `"name":"calculate"`) {
		t.Errorf("the late import is not offered as a function:\n%s", tools)
	}
}

// mathbotSide is organism A's configuration for the agent tests: the YAML
// agent mathbot, whose peers name gateway b (at addr, trusting bPub,
// importing Calculate), and the scripted model it asks.
func mathbotSide(t *testing.T, addr, bPub string) (*config.Organism, *scriptedModel) {
	t.Helper()
	m := newScriptedModel(t, map[string][]string{
		"mathbot": {toolCalls(scriptedCall{"c1", "calculate", `{"Expression":"6 * 7"}`}), "The answer is 42."},
	})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("a.yaml", fmt.Appendf(nil, `organism: {name: agents-a}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: mathbot, agent: true, description: Answers arithmetic questions, prompt: You are mathbot., peers: [b]}
gateways:
  - {name: b, remote_url: "%s", trusted_identity: %s, import: [Calculate]}
`, m.URL, addr, bPub))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, m
}
