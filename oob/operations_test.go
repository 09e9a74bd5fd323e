package oob

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestOperations runs each operation through the full request path and
// checks its answer, valid against privileged-msg.xsd.
func TestOperations(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name  string
		op    string
		code  string
		check func(t *testing.T, r *Response)
	}{
		{"list-listeners", `<list-listeners/>`, "", func(t *testing.T, r *Response) {
			l := r.Payload.Listeners
			if l == nil || l.Count != len(f.org.Pump.Listeners()) || l.Count != len(l.Listeners) {
				t.Fatalf("listeners %+v", l)
			}
			var greeter *ListenerInfo
			for i := range l.Listeners {
				if l.Listeners[i].Name == "greeter" {
					greeter = &l.Listeners[i]
				}
			}
			if greeter == nil || !greeter.IsAgent || greeter.Class != "handlers.hello.Greeting" || greeter.RootTag != "Greeting" ||
				greeter.Peers == nil || greeter.Peers.Peers[0] != "shouter" || greeter.MessagesHandled != nil {
				t.Fatalf("greeter %+v", greeter)
			}
		}},
		{"list-listeners detailed", `<list-listeners><detailed>true</detailed></list-listeners>`, "", func(t *testing.T, r *Response) {
			if r.Payload.Listeners.Listeners[0].MessagesHandled == nil || r.Payload.Listeners.Listeners[0].ActiveThreads == nil {
				t.Fatal("detailed listing without counters")
			}
		}},
		{"get-status", `<get-status><include-listeners>true</include-listeners><include-threads>false</include-threads>` +
			`<include-metrics>true</include-metrics></get-status>`, "", func(t *testing.T, r *Response) {
			s := r.Payload.Status
			if s == nil || s.Name != "hello-world" || s.State != "running" || s.ListenerCount != 10 || s.Listeners == nil ||
				s.Metrics == nil || len(s.Metrics.Metrics) == 0 {
				t.Fatalf("status %+v", s)
			}
		}},
		{"get-status include-threads", `<get-status><include-threads>true</include-threads></get-status>`, CodeInvalidArgument,
			func(t *testing.T, r *Response) {
				if msg := r.Payload.Error.Message; !strings.Contains(msg, "include-threads") {
					t.Fatalf("error %q does not name include-threads", msg)
				}
			}},
		{"get-listener-schema xsd", `<get-listener-schema><name>greeter</name></get-listener-schema>`, "", func(t *testing.T, r *Response) {
			s := r.Payload.ListenerSchema
			if s == nil || s.Format != "xsd" || !strings.Contains(s.Schema, `<xs:element name="Greeting"`) {
				t.Fatalf("schema %+v", s)
			}
		}},
		{"get-listener-schema example", `<get-listener-schema><name>greeter</name><format>example</format></get-listener-schema>`, "",
			func(t *testing.T, r *Response) {
				s := r.Payload.ListenerSchema
				if s == nil || s.Format != "example" || !strings.Contains(s.Schema, "<Greeting") {
					t.Fatalf("example %+v", s)
				}
			}},
		{"get-listener-schema unknown", `<get-listener-schema><name>nobody</name></get-listener-schema>`, CodeNotFound, nil},
		{"graph mermaid", `<get-organism-graph/>`, "", func(t *testing.T, r *Response) {
			g := r.Payload.OrganismGraph
			if g == nil || g.Format != "mermaid" || !strings.HasPrefix(g.Graph, "graph LR\n") || !strings.Contains(g.Graph, `"greeter"`) ||
				!strings.Contains(g.Graph, " --> ") {
				t.Fatalf("graph %+v", g)
			}
		}},
		{"graph graphviz", `<get-organism-graph><format>graphviz</format></get-organism-graph>`, "", func(t *testing.T, r *Response) {
			g := r.Payload.OrganismGraph
			if g == nil || !strings.HasPrefix(g.Graph, `digraph "hello-world" {`) || !strings.Contains(g.Graph, " -> ") {
				t.Fatalf("graph %+v", g)
			}
		}},
		{"graph json", `<get-organism-graph><format>json</format></get-organism-graph>`, "", func(t *testing.T, r *Response) {
			var g organismGraph
			if err := json.Unmarshal([]byte(r.Payload.OrganismGraph.Graph), &g); err != nil {
				t.Fatal(err)
			}
			if len(g.Nodes) != 10 || len(g.Edges) != 1 || g.Edges[0] != (graphEdge{From: "greeter", To: "shouter"}) {
				t.Fatalf("graph %+v", g)
			}
		}},
		{"get-config all", `<get-config/>`, "", func(t *testing.T, r *Response) {
			c := r.Payload.Config
			if c == nil || len(c.Entries) < 5 || c.Entries[0].Key != "organism.name" || c.Entries[0].Value != "hello-world" {
				t.Fatalf("config %+v", c)
			}
		}},
		{"get-config one", `<get-config><key>log_level</key></get-config>`, "", func(t *testing.T, r *Response) {
			c := r.Payload.Config
			if len(c.Entries) != 1 || !c.Entries[0].Mutable || c.Entries[0].Value != "info" {
				t.Fatalf("config %+v", c)
			}
		}},
		{"set-config log_level", `<set-config><key>log_level</key><value>debug</value></set-config>`, "", func(t *testing.T, r *Response) {
			if f.level.Level() != slog.LevelDebug {
				t.Fatalf("level %v", f.level.Level())
			}
		}},
		{"set-config bad value", `<set-config><key>log_level</key><value>loud</value></set-config>`, CodeInvalidArgument, nil},
		{"set-config immutable", `<set-config><key>organism.port</key><value>1</value></set-config>`, CodeImmutable, nil},
		{"set-config unknown", `<set-config><key>nope</key><value>1</value></set-config>`, CodeNotFound, nil},
		{"register-remote-gateway", `<register-remote-gateway><url>wss://peer.example.org/</url>` +
			`<identity>AAAA</identity><import-tags><tag>Search</tag></import-tags></register-remote-gateway>`, "", nil},
		{"unregister-remote-gateway", `<unregister-remote-gateway><url>wss://peer.example.org/</url></unregister-remote-gateway>`, "", nil},
		{"unregister-remote-gateway again", `<unregister-remote-gateway><url>wss://peer.example.org/</url></unregister-remote-gateway>`, CodeNotFound, nil},
		{"register-listener unknown class", `<register-listener><name>x</name><class>nope.Nope</class><handler>hello.Greet</handler></register-listener>`,
			CodeInvalidArgument, nil},
		{"register-listener tag taken", `<register-listener><name>x</name><class>handlers.hello.Greeting</class>` +
			`<handler>handlers.hello.handle_greeting</handler></register-listener>`, CodeInvalidArgument, nil},
		{"unregister-listener unknown", `<unregister-listener><name>nobody</name></unregister-listener>`, CodeNotFound, nil},
		{"unregister-listener system", `<unregister-listener><name>system.boot</name></unregister-listener>`, CodeInvalidArgument, nil},
		{"subscribe without a connection", `<subscribe-thread/>`, CodeNotSupported, nil},
		{"unsubscribe unknown", `<unsubscribe><subscription-id>sub-9</subscription-id></unsubscribe>`, CodeNotFound, nil},
		{"history unknown thread", `<get-thread-history><thread-id>nope</thread-id></get-thread-history>`, CodeNotFound, nil},
		{"inject unknown listener", `<inject-message><to>nobody</to><payload><Greeting xmlns=""><Name>A</Name></Greeting></payload></inject-message>`,
			CodeNotFound, nil},
		{"inject invalid payload", `<inject-message><to>greeter</to><payload><Greeting xmlns=""><Nom>A</Nom></Greeting></payload></inject-message>`,
			CodeInvalidArgument, nil},
		{"inject no payload", `<inject-message><to>greeter</to><payload>text</payload></inject-message>`, CodeInvalidArgument, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.op)
			if got := code(r); got != tc.code {
				t.Fatalf("code %q (%+v), want %q", got, r.Payload.Error, tc.code)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestInjectAndHistory: inject-message starts a conversation; once it
// completed its journal reads back through get-thread-history, paged.
func TestInjectAndHistory(t *testing.T) {
	f := newFixture(t, nil)
	done := make(chan string, 16)
	cancel := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			done <- e.Conversation
		}
	}))
	defer cancel()
	r := f.do(t, `<inject-message><to>greeter</to><from>ops</from><payload><Greeting xmlns=""><Name>Ada</Name></Greeting></payload></inject-message>`)
	tc := r.Payload.ThreadCreated
	if tc == nil || tc.RoutedTo != "greeter" || tc.ThreadID == "" {
		t.Fatalf("inject: %+v %+v", tc, r.Payload.Error)
	}
	waitFor(t, done, tc.ThreadID)
	if err := f.org.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := f.do(t, `<get-thread-history><thread-id>`+tc.ThreadID+`</thread-id><include-payloads>true</include-payloads></get-thread-history>`).Payload.ThreadHistory
	if h == nil || h.Total < 1 || len(h.Messages) != h.Total {
		t.Fatalf("history %+v", h)
	}
	first := h.Messages[0]
	if first.From != "ops" || first.To != "greeter" || first.PayloadType != "Greeting" || !strings.Contains(first.Payload, "<Name>Ada</Name>") {
		t.Fatalf("first message %+v", first)
	}
	page := f.do(t, `<get-thread-history><thread-id>`+tc.ThreadID+`</thread-id><limit>1</limit><offset>`+
		"0"+`</offset></get-thread-history>`).Payload.ThreadHistory
	if len(page.Messages) != 1 || page.Messages[0].Payload != "" || page.Total != h.Total {
		t.Fatalf("page %+v", page)
	}
}

func waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %s", want)
		}
	}
}

// TestShutdownAcksThenStops: the stop runs after the answer; a second
// shutdown is refused; status says shutting-down.
func TestShutdownAcksThenStops(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do(t, `<shutdown><mode>graceful</mode><reason>maintenance</reason><timeout-seconds>5</timeout-seconds></shutdown>`)
	if r.Payload.Ack == nil || !r.Payload.Ack.Success {
		t.Fatalf("shutdown: %+v", r.Payload)
	}
	select {
	case reason := <-f.stopped:
		if reason != "maintenance" {
			t.Fatalf("reason %q", reason)
		}
	default:
		t.Fatal("Handle returned before the stop ran")
	}
	if c := code(f.do(t, `<shutdown/>`)); c != CodeShuttingDown {
		t.Fatalf("second shutdown: %q", c)
	}
	if s := f.do(t, `<get-status/>`).Payload.Status; s.State != "shutting-down" {
		t.Fatalf("state %q", s.State)
	}
}

// TestShutdownWithoutStopper is refused.
func TestShutdownWithoutStopper(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Target.Stopper = nil })
	if c := code(f.do(t, `<shutdown/>`)); c != CodeNotSupported {
		t.Fatalf("code %q", c)
	}
}

// TestRegisterListenerHot: over a connection, unregister-listener removes
// a listener (a listener-event push), register-listener adds one from the
// catalog under a new name, and a new conversation reaches it.
func TestRegisterListenerHot(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := f.dialUnix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	do := func(op string) *Response {
		t.Helper()
		r, raw, err := c.Do(ctx, []byte(op))
		if err != nil {
			t.Fatal(err)
		}
		validDoc(t, raw)
		return r
	}
	if r := do(`<subscribe-thread><thread-id>none</thread-id></subscribe-thread>`); r.Payload.Subscription == nil {
		t.Fatalf("subscribe: %+v", r.Payload)
	}
	if r := do(`<unregister-listener><name>response-handler</name></unregister-listener>`); r.Payload.Ack == nil {
		t.Fatalf("unregister: %+v", r.Payload.Error)
	}
	if _, ok := f.org.Pump.Lookup("response-handler"); ok {
		t.Fatal("still registered")
	}
	if r := do(`<register-listener><name>printer</name><class>handlers.hello.ShoutedResponse</class>` +
		`<handler>handlers.hello.handle_response_print</handler><description>prints</description></register-listener>`); r.Payload.Ack == nil {
		t.Fatalf("register: %+v", r.Payload.Error)
	}
	var events []string
	for len(events) < 2 {
		p, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("pushes %v: %v", events, err)
		}
		validDoc(t, raw)
		if le := p.Payload.ListenerEvent; le != nil {
			events = append(events, le.EventType+" "+le.Name)
		}
	}
	if events[0] != "unregistered response-handler" || events[1] != "registered printer" {
		t.Fatalf("listener events %v", events)
	}
	l := do(`<list-listeners/>`).Payload.Listeners
	var printer *ListenerInfo
	for i := range l.Listeners {
		if l.Listeners[i].Name == "printer" {
			printer = &l.Listeners[i]
		}
	}
	if printer == nil || printer.Class != "handlers.hello.ShoutedResponse" || printer.RootTag != "ShoutedResponse" {
		t.Fatalf("printer %+v", printer)
	}
	r := do(`<inject-message><to>printer</to><payload><ShoutedResponse xmlns=""><Message>HI</Message></ShoutedResponse></payload></inject-message>`)
	if r.Payload.ThreadCreated == nil {
		t.Fatalf("inject: %+v", r.Payload.Error)
	}
	select {
	case got := <-f.printed:
		if !strings.HasSuffix(got, ": HI") {
			t.Fatalf("printed %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the new listener never handled the message")
	}
	if r := do(`<register-listener><name>printer</name><class>handlers.hello.ShoutedResponse</class>` +
		`<handler>handlers.hello.handle_response_print</handler></register-listener>`); code(r) != CodeInvalidArgument {
		t.Fatalf("duplicate: %+v", r.Payload)
	}
}
