package pump_test

// Ports of the reference's tests/test_pump_integration.py (python-reference
// §11.3) and the pump-level tests of tests/test_todo_registry.py (§11.4), with
// the reference quirks fixed: no double-bootstrap failure (Q2), errors reach
// the sender instead of stdout (Q8, Q31), canned <huh> text (no topology), the
// greeter's todo watcher is raised by the real flow (Q21).

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

const organismYAML = "../organism.yaml"

// fakeLLM answers every completion with a fixed text (the reference mocks
// agentserver.llm.complete the same way).
type fakeLLM string

// Complete returns the canned text.
func (f fakeLLM) Complete(context.Context, string, string, string) (string, error) {
	return string(f), nil
}

// printer collects what response-handler prints, as "[from] text".
type printer struct {
	mu    sync.Mutex
	lines []string
	ch    chan string
}

func newPrinter() *printer { return &printer{ch: make(chan string, 16)} }

func (p *printer) print(_, from, text string) {
	line := "[" + from + "] " + text
	p.mu.Lock()
	p.lines = append(p.lines, line)
	p.mu.Unlock()
	p.ch <- line
}

func (p *printer) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-p.ch:
		return l
	case <-waitCtx(t).Done():
		t.Fatal("nothing printed")
		return ""
	}
}

// loadHelloWorld assembles organism.yaml with the given services, without
// starting it (so subscribers can attach before the boot message); it is shut
// down when the test ends.
func loadHelloWorld(t *testing.T, env catalog.Env) *organism.Organism {
	t.Helper()
	o, err := organism.Load(organismYAML, organism.Options{Env: env,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatalf("organism.Load: %v", err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return o
}

func startOrganism(t *testing.T, o *organism.Organism) {
	t.Helper()
	if err := o.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// TestConfigLoaderParsesYAML ports TestPumpBootstrap::test_config_loader_parses_yaml.
func TestConfigLoaderParsesYAML(t *testing.T) {
	cfg, err := config.Load(organismYAML)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range cfg.Listeners {
		names = append(names, l.Name)
	}
	if cfg.Organism.Name != "hello-world" {
		t.Errorf("organism name %q", cfg.Organism.Name)
	}
	if diff := cmp.Diff([]string{"greeter", "shouter", "response-handler"}, names); diff != "" {
		t.Errorf("listeners (-want +got):\n%s", diff)
	}
}

// TestBootstrapCreatesPump ports ::test_bootstrap_creates_pump (and, by
// loading twice in one process, the Q2 double-bootstrap failure of
// ::test_bootstrap_generates_xsd / ::test_inject_adds_to_queue).
func TestBootstrapCreatesPump(t *testing.T) {
	for range 2 {
		o := loadHelloWorld(t, catalog.Env{})
		if o.Config.Organism.Name != "hello-world" || o.Pump.Organism() != "hello-world" {
			t.Errorf("organism %q / %q", o.Config.Organism.Name, o.Pump.Organism())
		}
		routes := map[string][]string{}
		for _, r := range o.Pump.Routes() {
			routes[r.Tag] = r.Listeners
		}
		want := map[string][]string{
			"Greeting":                              {"greeter"},
			"GreetingResponse":                      {"shouter"},
			"ShoutedResponse":                       {"response-handler"},
			"{https://xml-pipeline.org/system}boot": {"system.boot"},
			"TodoUntil":                             {"system.todo"},
			"TodoComplete":                          {"system.todo-complete"},
			// meta.enabled defaults to true: the four core meta listeners.
			"{https://xml-pipeline.org/ns/meta/v1}request-schema":    {"core.request-schema"},
			"{https://xml-pipeline.org/ns/meta/v1}request-example":   {"core.request-example"},
			"{https://xml-pipeline.org/ns/meta/v1}request-prompt":    {"core.request-prompt"},
			"{https://xml-pipeline.org/ns/meta/v1}list-capabilities": {"core.list-capabilities"},
		}
		if diff := cmp.Diff(want, routes); diff != "" {
			t.Errorf("routing table (-want +got):\n%s", diff)
		}
		if n := len(o.Pump.Listeners()); n != 10 {
			t.Errorf("%d listeners, want 10", n)
		}
	}
}

// TestBootstrapGeneratesXSD ports ::test_bootstrap_generates_xsd: the greeter's
// schema, derived from the Go type, accepts a Greeting and rejects others.
func TestBootstrapGeneratesXSD(t *testing.T) {
	o := loadHelloWorld(t, catalog.Env{})
	greeter, ok := o.Pump.Lookup("greeter")
	if !ok {
		t.Fatal("no greeter")
	}
	in, err := stage.NewIngress(stage.IngressConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for payload, valid := range map[string]bool{
		`<Greeting xmlns=""><Name>Test</Name></Greeting>`:            true,
		`<Greeting xmlns=""><Nom>Test</Nom></Greeting>`:              false,
		`<Greeting xmlns=""><Name>a</Name><Name>b</Name></Greeting>`: false,
	} {
		m, err := in.Read(envelope(client, "greeter", stage.NewThreadID(), payload))
		if err != nil {
			t.Fatal(err)
		}
		err = m.ValidatePayload(greeter.Payload)
		m.Close()
		if (err == nil) != valid {
			t.Errorf("%s: valid=%v, want %v (%v)", payload, err == nil, valid, err)
		}
	}
}

// TestInjectAddsToQueue ports ::test_inject_adds_to_queue: the boot message is
// the first message (to system.boot, from system, on the boot thread), and an
// injected non-envelope gets a <huh> instead of silently entering the queue.
func TestInjectAddsToQueue(t *testing.T) {
	o := loadHelloWorld(t, catalog.Env{})
	events := newRecorder()
	o.Pump.Subscribe(events)
	startOrganism(t, o)
	boot := events.waitFor(t, "boot delivery", kind(pump.EventMessage))
	if boot.Listener != "system.boot" || boot.From != "system" || boot.PayloadName != "boot" || boot.Thread != o.BootThread {
		t.Errorf("first message %s from %s (%s) on %s, want boot from system to system.boot on %s",
			boot.Listener, boot.From, boot.PayloadName, boot.Thread, o.BootThread)
	}
	out := newRecorder()
	if _, err := injectErr(t, o.Pump, []byte(`<test/>`), out); err == nil {
		t.Error("a non-envelope was accepted")
	}
	if e := out.waitFor(t, "huh", kind(pump.EventHuh)); e.Error != failure.HuhEnvelope {
		t.Errorf("huh %q", e.Error)
	}
}

// greeterOnly is the reference's TestFullPipelineFlow pump: greeter (agent,
// peers [shouter]) with a recording wrapper; shouter is a probe when given.
func greeterOnly(t *testing.T, pr *probe, llm hello.Completer, withShouter bool) *pump.Pump {
	g := &hello.Greeter{LLM: llm}
	greeter := agent(listenerOf(t, "greeter", func(ctx context.Context, in *hello.Greeting, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("greeter", in, md)
		return g.Handle(ctx, in, md)
	}), "shouter")
	ls := []pump.Listener{greeter}
	if withShouter {
		ls = append(ls, sink[hello.GreetingResponse](t, "shouter", pr))
	}
	return startPump(t, pump.Options{Organism: "hello-world"}, ls...)
}

// TestGreetingRoundTrip ports TestFullPipelineFlow::test_greeting_round_trip.
func TestGreetingRoundTrip(t *testing.T) {
	pr := newProbe()
	p := greeterOnly(t, pr, fakeLLM("Hello!"), false)
	tid := stage.NewThreadID()
	out := newRecorder()
	if _, err := injectErr(t, p, envelope("user", "greeter", tid, `<Greeting xmlns=""><Name>World</Name></Greeting>`), out); err != nil {
		t.Fatal(err)
	}
	c := pr.next(t)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if diff := cmp.Diff(&hello.Greeting{Name: "World"}, c.Payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if c.MD.ThreadID != tid || c.MD.From != "user" || c.MD.OwnName != "greeter" {
		t.Errorf("metadata %+v", c.MD)
	}
	if !strings.Contains(c.MD.UsageInstructions, "shouter (not registered)") {
		t.Errorf("usage instructions do not flag the missing peer:\n%s", c.MD.UsageInstructions)
	}
	if n := len(pr.all()); n != 1 {
		t.Errorf("%d handler calls, want 1", n)
	}
}

// TestHandlerResponseReinjected ports ::test_handler_response_reinjected: the
// greeter's output re-enters the pump as an envelope from greeter carrying the
// LLM's text.
func TestHandlerResponseReinjected(t *testing.T) {
	pr := newProbe()
	p := greeterOnly(t, pr, fakeLLM("Hello, Alice!"), true)
	events := newRecorder()
	p.Subscribe(events)
	out := newRecorder()
	mustSend(t, p, "user", "greeter", &hello.Greeting{Name: "Alice"}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	e := events.waitFor(t, "re-entry to shouter", func(e pump.Event) bool {
		return e.Kind == pump.EventMessage && e.Listener == "shouter"
	})
	if e.From != "greeter" || !strings.Contains(string(e.Envelope), "Hello, Alice!") ||
		!strings.Contains(string(e.Envelope), "<from>greeter</from>") {
		t.Errorf("re-entered envelope from %s: %s", e.From, e.Envelope)
	}
}

// TestInvalidXMLError ports TestErrorHandling::test_invalid_xml_error, with a
// real assertion: the sender gets a <huh> and the pump keeps working.
func TestInvalidXMLError(t *testing.T) {
	pr := newProbe()
	p := greeterOnly(t, pr, fakeLLM("Hi"), true)
	out := newRecorder()
	injectErr(t, p, []byte(`<not valid xml`), out)
	if e := out.waitFor(t, "huh", kind(pump.EventHuh)); e.Error != failure.HuhEnvelope {
		t.Errorf("huh %q", e.Error)
	}
	ok := newRecorder()
	mustSend(t, p, "user", "greeter", &hello.Greeting{Name: "after"}, ok)
	ok.waitFor(t, "completion", kind(pump.EventComplete))
}

// TestUnknownRouteError ports ::test_unknown_route_error. The reference's error
// named the target ("No listener for: nonexistent.greeting"); the fixed pump
// sends the canned text and keeps the name in the operators' diagnostics.
func TestUnknownRouteError(t *testing.T) {
	p := greeterOnly(t, newProbe(), fakeLLM("Hi"), false)
	out := newRecorder()
	injectErr(t, p, envelope("user", "nonexistent", stage.NewThreadID(), `<Greeting xmlns=""><Name>x</Name></Greeting>`), out)
	e := out.waitFor(t, "huh", kind(pump.EventHuh))
	if e.Error != failure.HuhPayload || strings.Contains(e.Error, "nonexistent") {
		t.Errorf("huh %q", e.Error)
	}
	if !strings.Contains(strings.Join(e.Diagnostics, "\n"), "nonexistent") {
		t.Errorf("diagnostics %q do not name the missing listener", e.Diagnostics)
	}
}

// consoleChain builds the reference's TestThreadRoutingFlow organism:
// console-router → greeter → shouter → response-handler.
func consoleChain(t *testing.T, pr *probe, pt *printer, paths *sync.Map) *pump.Pump {
	var p *pump.Pump
	router := listenerOf(t, "console-router", func(_ context.Context, in *ConsoleInput, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("console-router", in, md)
		paths.Store(md.ThreadID, p.Threads().DebugDump()[md.ThreadID])
		return xmlpipe.Send(in.Target, &hello.Greeting{Name: in.Text}), nil
	})
	g := &hello.Greeter{LLM: fakeLLM("Hello there, friend!")}
	greeter := agent(listenerOf(t, "greeter", func(ctx context.Context, in *hello.Greeting, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("greeter", in, md)
		return g.Handle(ctx, in, md)
	}), "shouter")
	shouter := listenerOf(t, "shouter", func(ctx context.Context, in *hello.GreetingResponse, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("shouter", in, md)
		return hello.Shout(ctx, in, md)
	})
	printerL := listenerOf(t, "response-handler", func(ctx context.Context, in *hello.ShoutedResponse, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("response-handler", in, md)
		return (&hello.Printer{Print: pt.print}).Handle(ctx, in, md)
	})
	p = startPump(t, pump.Options{Organism: "hello-world"}, router, greeter, shouter, printerL)
	return p
}

// TestFullThreadRoutingChain ports TestThreadRoutingFlow::test_full_thread_routing_chain.
func TestFullThreadRoutingChain(t *testing.T) {
	pr, pt := newProbe(), newPrinter()
	p := consoleChain(t, pr, pt, &sync.Map{})
	out := newRecorder()
	mustSend(t, p, "console", "console-router", &ConsoleInput{Text: "TestUser", Target: "greeter"}, out)
	if line := pt.next(t); line != "[shouter] HELLO THERE, FRIEND!" {
		t.Errorf("printed %q", line)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	calls := pr.all()
	var order []string
	for _, c := range calls {
		order = append(order, c.Listener)
	}
	if diff := cmp.Diff([]string{"console-router", "greeter", "shouter", "response-handler"}, order); diff != "" {
		t.Fatalf("handler calls (-want +got):\n%s", diff)
	}
	if in := calls[0].Payload.(*ConsoleInput); in.Target != "greeter" {
		t.Errorf("console-router got %+v", in)
	}
	if diff := cmp.Diff(&hello.Greeting{Name: "TestUser"}, calls[1].Payload); diff != "" {
		t.Errorf("greeter payload (-want +got):\n%s", diff)
	}
	if msg := calls[2].Payload.(*hello.GreetingResponse).Message; !strings.Contains(msg, "Hello") && !strings.Contains(msg, "friend") {
		t.Errorf("shouter got %q", msg)
	}
	if msg := calls[3].Payload.(*hello.ShoutedResponse).Message; msg != strings.ToUpper(msg) {
		t.Errorf("response-handler got %q, not upper case", msg)
	}
}

// TestThreadIDChainExtension ports ::test_thread_id_chain_extension: the
// injected thread maps to [organism, console, console-router] — segments,
// rooted at the organism, starting with the external sender.
func TestThreadIDChainExtension(t *testing.T) {
	pr, pt := newProbe(), newPrinter()
	var paths sync.Map
	p := consoleChain(t, pr, pt, &paths)
	tid := stage.NewThreadID()
	out := newRecorder()
	raw := envelope("console", "console-router", tid, `<ConsoleInput xmlns=""><Text>x</Text><Target>greeter</Target></ConsoleInput>`)
	if _, err := injectErr(t, p, raw, out); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	got, _ := paths.Load(tid)
	if diff := cmp.Diff([]string{"hello-world", "console", "console-router"}, got); diff != "" {
		t.Errorf("path of the injected thread (-want +got):\n%s", diff)
	}
}

// TestManualListenerRegistration ports
// TestManualPumpConfiguration::test_manual_listener_registration.
func TestManualListenerRegistration(t *testing.T) {
	p := newPump(t, pump.Options{}, agent(sink[hello.Greeting](t, "greeter", newProbe()), "shouter"))
	l, ok := p.Lookup("greeter")
	if !ok || l.Name != "greeter" || l.Payload.Name() != "Greeting" {
		t.Fatalf("Lookup(greeter) = %+v, %v", l, ok)
	}
	if diff := cmp.Diff([]pump.Route{{Tag: "Greeting", Listeners: []string{"greeter"}}}, p.Routes()); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

// TestCustomHandler ports ::test_custom_handler: a custom handler on listener
// "custom" gets the decoded Greeting. Its raw <Ack/> has no listener, so it
// comes back to custom as a <huh> instead of being dropped.
func TestCustomHandler(t *testing.T) {
	pr := newProbe()
	huhs := make(chan *xmlpipe.Huh, 1)
	custom := withErrorHandler(listenerOf(t, "custom", func(_ context.Context, in *hello.Greeting, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("custom", in, md)
		return xmlpipe.Raw([]byte(`<Ack/>`)), nil
	}), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		huhs <- de.Huh
		return nil, nil
	})
	p := startPump(t, pump.Options{}, custom)
	out := newRecorder()
	mustSend(t, p, "user", "custom", &hello.Greeting{Name: "Custom"}, out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if c := pr.next(t); c.Payload.(*hello.Greeting).Name != "Custom" {
		t.Errorf("custom got %+v", c.Payload)
	}
	if h := <-huhs; h == nil || h.Error != failure.HuhPayload {
		t.Errorf("custom's unroutable output came back as %#v", h)
	}
}

// TestBufferRecordsMessagesDuringFlow ports the pump test of
// test_context_buffer.py: the context buffer holds the greeting before the
// handler runs.
func TestBufferRecordsMessagesDuringFlow(t *testing.T) {
	pr := newProbe()
	p := greeterOnly(t, pr, fakeLLM("Hi"), true)
	tid := stage.NewThreadID()
	out := newRecorder()
	injectErr(t, p, envelope("user", "greeter", tid, `<Greeting xmlns=""><Name>Alice</Name></Greeting>`), out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	tc, ok := p.Context().Thread(tid)
	if !ok {
		t.Fatal("no context for the conversation thread")
	}
	slots := tc.ByType("Greeting")
	if len(slots) == 0 {
		t.Fatal("no Greeting slot")
	}
	if g, ok := slots[0].Payload.(*hello.Greeting); !ok || g.Name != "Alice" {
		t.Errorf("slot payload %#v", slots[0].Payload)
	}
}

// TestTodoNudgeAppearsInMetadata ports
// TestTodoIntegration::test_todo_nudge_appears_in_metadata.
func TestTodoNudgeAppearsInMetadata(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, agent(sink[hello.Greeting](t, "greeter", pr)))
	tid := stage.NewThreadID()
	id := p.Todos().Register(tid, "greeter", "SomeResponse", "", "waiting for some response")
	if raised := p.Todos().Check(tid, "SomeResponse", "someone", nil); len(raised) != 1 {
		t.Fatalf("watcher not raised: %v", raised)
	}
	injectErr(t, p, envelope("console", "greeter", tid, `<Greeting xmlns=""><Name>Test</Name></Greeting>`), newRecorder())
	md := pr.next(t).MD
	for _, want := range []string{"SYSTEM NOTE", id, "TodoComplete"} {
		if !strings.Contains(md.TodoNudge, want) {
			t.Errorf("todo nudge lacks %q:\n%s", want, md.TodoNudge)
		}
	}
}

// TestMessageRaisesEyebrow ports TestTodoIntegration::test_message_raises_eyebrow.
func TestMessageRaisesEyebrow(t *testing.T) {
	var p *pump.Pump
	var id string
	seen := make(chan *registry.Watcher, 1)
	p = startPump(t, pump.Options{}, listenerOf(t, "response-handler",
		func(context.Context, *hello.ShoutedResponse, xmlpipe.Metadata) (xmlpipe.Response, error) {
			w, _ := p.Todos().Get(id) // Check ran before the handler
			seen <- w
			return nil, nil
		}))
	tid := stage.NewThreadID()
	id = p.Todos().Register(tid, "greeter", "ShoutedResponse", "shouter", "")
	out := newRecorder()
	injectErr(t, p, envelope("shouter", "response-handler", tid, `<ShoutedResponse xmlns=""><Message>HELLO!</Message></ShoutedResponse>`), out)
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if w := <-seen; w == nil || !w.Raised || w.TriggeredFrom != "shouter" {
		t.Errorf("watcher %+v, want raised by shouter", w)
	}
	if _, ok := p.Todos().Get(id); ok {
		t.Error("the watcher outlived its thread, which the handler ended")
	}
}

// TestHelloWorld: `@greeter Dan` through organism.yaml prints
// `[shouter] HELLO, DAN!`; the greeter's todo watcher is raised by the real
// flow (TestGreeterTodoFlow::test_greeter_registers_todo_and_eyebrow_raised,
// Q21 fixed), and on the next greeting on the same thread the greeter sees the
// nudge, closes the raised watcher and registers exactly one new one
// (::test_greeter_closes_raised_todos_on_next_call).
func TestHelloWorld(t *testing.T) {
	pt := newPrinter()
	o := loadHelloWorld(t, catalog.Env{Print: pt.print})
	events := newRecorder()
	o.Pump.Subscribe(events)
	startOrganism(t, o)
	p := o.Pump
	out := newRecorder()
	thread := mustSend(t, p, "console", "greeter", &hello.Greeting{Name: "Dan"}, out)
	if line := pt.next(t); line != "[shouter] HELLO, DAN!" {
		t.Errorf("printed %q", line)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	first := p.Todos().RaisedFor(thread, "greeter")
	if len(first) != 1 {
		t.Fatalf("raised watchers for greeter on %s: %d, want 1", thread, len(first))
	}
	if w := first[0]; w.Issuer != "greeter" || w.WaitFor != "shoutedresponse" || w.FromListener != "shouter" ||
		w.TriggeredFrom != "shouter" {
		t.Errorf("watcher %+v", w)
	}
	if pending := p.Todos().PendingFor(thread, "greeter"); len(pending) != 0 {
		t.Errorf("%d pending watchers, want 0", len(pending))
	}

	// The next greeting on the same conversation thread carries the nudge.
	var nudge string
	again := newRecorder()
	raw := envelope("console", "greeter", thread, `<Greeting xmlns=""><Name>Bob</Name></Greeting>`)
	if _, err := injectErr(t, p, raw, again); err != nil {
		t.Fatal(err)
	}
	if line := pt.next(t); line != "[shouter] HELLO, BOB!" {
		t.Errorf("printed %q", line)
	}
	again.waitFor(t, "completion", kind(pump.EventComplete))
	if tc, ok := p.Context().Thread(thread); ok {
		for _, s := range tc.ByType("Greeting") {
			if s.Payload.(*hello.Greeting).Name == "Bob" {
				nudge = s.TodoNudge
			}
		}
	}
	if !strings.Contains(nudge, first[0].ID) {
		t.Errorf("the second greeting's nudge does not name the raised watcher:\n%s", nudge)
	}
	if _, ok := p.Todos().Get(first[0].ID); ok {
		t.Error("the raised watcher was not closed")
	}
	second := p.Todos().RaisedFor(thread, "greeter")
	if len(second) != 1 || second[0].ID == first[0].ID {
		t.Errorf("watchers after the second greeting: %+v, want exactly one new one", second)
	}
	events.waitFor(t, "boot message", func(e pump.Event) bool {
		return e.Kind == pump.EventMessage && e.Listener == "system.boot" && e.Thread == o.BootThread
	})
}
