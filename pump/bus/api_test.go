package bus

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// tokens logs in one user of each role.
func (f *fixture) tokens() map[auth.Role]string {
	out := map[auth.Role]string{}
	for _, r := range []auth.Role{auth.Viewer, auth.Operator, auth.Admin} {
		name := "user-" + string(r)
		out[r] = f.loginAs(name, r)
	}
	return out
}

// completions records the conversations that complete from now on; wait
// blocks until one has.
type completions struct {
	mu   sync.Mutex
	done map[string]bool
	ch   chan struct{}
}

func (f *fixture) watchCompletions() *completions {
	c := &completions{done: map[string]bool{}, ch: make(chan struct{}, 1)}
	stop := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind != pump.EventComplete {
			return
		}
		c.mu.Lock()
		c.done[e.Conversation] = true
		c.mu.Unlock()
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}))
	f.t.Cleanup(stop)
	return c
}

func (c *completions) wait(t *testing.T, conv string) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		ok := c.done[conv]
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.ch:
		case <-timer.C:
			t.Fatalf("conversation %s did not complete", conv)
		}
	}
}

// waitJournal flushes the organism's journal so reads see every entry.
func (f *fixture) waitJournal() {
	f.t.Helper()
	if err := f.org.Store().Flush(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func TestAPIRoles(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()
	inject := map[string]any{"to": "greeter", "payload": map[string]string{"name": "Role"}}
	tests := []struct {
		method, path string
		body         any
		// want is the status for viewer, operator and admin.
		want [3]int
	}{
		{"GET", "/api/v1/organism", nil, [3]int{200, 200, 200}},
		{"GET", "/api/v1/agents", nil, [3]int{200, 200, 200}},
		{"GET", "/api/v1/threads", nil, [3]int{200, 200, 200}},
		{"POST", "/api/v1/inject", inject, [3]int{403, 200, 200}},
		{"POST", "/api/v1/agents/shouter/pause", nil, [3]int{403, 403, 200}},
		{"POST", "/api/v1/agents/shouter/resume", nil, [3]int{403, 403, 200}},
		{"POST", "/api/v1/threads/" + stage.NewThreadID() + "/kill", nil, [3]int{403, 404, 404}},
		{"POST", "/api/v1/organism/reload", nil, [3]int{403, 403, 501}},
		{"POST", "/api/v1/organism/stop", nil, [3]int{403, 403, 501}},
	}
	for _, tt := range tests {
		for i, role := range []auth.Role{auth.Viewer, auth.Operator, auth.Admin} {
			status, body, _ := f.do(tt.method, tt.path, tok[role], tt.body)
			if status != tt.want[i] {
				t.Errorf("%s %s as %s: %d %v, want %d", tt.method, tt.path, role, status, body, tt.want[i])
			}
			if status == http.StatusForbidden && body["error"] != "Forbidden" {
				t.Errorf("%s %s as %s: body %v", tt.method, tt.path, role, body)
			}
		}
	}
}

func TestAPIReadEndpoints(t *testing.T) {
	f := newFixture(t)
	tok := f.tokens()[auth.Viewer]

	status, org, _ := f.do("GET", "/api/v1/organism", tok, nil)
	if status != 200 || org["name"] != "hello-world" || org["status"] != "running" || org["agent_count"] != 10.0 {
		t.Errorf("organism: %d %v", status, org)
	}

	status, cfg, _ := f.do("GET", "/api/v1/organism/config", tok, nil)
	organism, _ := cfg["organism"].(map[string]any)
	if status != 200 || organism["name"] != "hello-world" || organism["port"] != 8765.0 {
		t.Errorf("config: %d %v", status, cfg)
	}

	status, agents, _ := f.do("GET", "/api/v1/agents", tok, nil)
	list, _ := agents["agents"].([]any)
	if status != 200 || len(list) != 10 {
		t.Fatalf("agents: %d %v", status, agents)
	}
	status, greeter, _ := f.do("GET", "/api/v1/agents/greeter", tok, nil)
	want := map[string]any{"name": "greeter", "description": "Greeting agent - forwards to shouter", "is_agent": true,
		"broadcast": false, "peers": []any{"shouter"}, "payload_class": "handlers.hello.Greeting", "root_tag": "Greeting",
		"state": "idle", "queue_depth": 0.0, "active": 0.0}
	got := map[string]any{}
	for k := range want {
		got[k] = greeter[k]
	}
	if diff := cmp.Diff(want, got); status != 200 || diff != "" {
		t.Errorf("agent: %d (-want +got):\n%s", status, diff)
	}
	if status, body, _ := f.do("GET", "/api/v1/agents/nobody", tok, nil); status != 404 || body["error"] != "Agent not found" {
		t.Errorf("unknown agent: %d %v", status, body)
	}
	status, lc, _ := f.do("GET", "/api/v1/agents/greeter/config", tok, nil)
	if status != 200 || lc["name"] != "greeter" || lc["payload_class"] != "handlers.hello.Greeting" {
		t.Errorf("agent config: %d %v", status, lc)
	}
	status, xsd, _ := f.do("GET", "/api/v1/agents/greeter/schema", tok, nil)
	if s, _ := xsd["_raw"].(string); status != 200 || !strings.Contains(s, `<xs:element name="Greeting"`) {
		t.Errorf("schema: %d %v", status, xsd)
	}
}

func TestAPIInjectAndJournal(t *testing.T) {
	f := newFixture(t)
	tokens := f.tokens()
	op, viewer := tokens[auth.Operator], tokens[auth.Viewer]
	completed := f.watchCompletions()

	injects := []struct {
		name    string
		payload any
	}{
		{"fields", map[string]string{"name": "Ann"}},
		{"snake and case", map[string]string{"NAME": "Ann"}},
		{"xml", `<?xml version="1.0"?><Greeting><Name>Ann</Name></Greeting>`},
	}
	var threads []string
	for _, in := range injects {
		status, body, _ := f.do("POST", "/api/v1/inject", op, map[string]any{"to": "greeter", "payload": in.payload})
		thread, _ := body["thread_id"].(string)
		id, _ := body["message_id"].(string)
		if status != 200 || !stage.IsThreadID(thread) || len(id) != 64 {
			t.Fatalf("inject %s: %d %v", in.name, status, body)
		}
		threads = append(threads, thread)
		completed.wait(t, thread)
		f.waitJournal()
		status, msgs, _ := f.do("GET", "/api/v1/threads/"+thread+"/messages", viewer, nil)
		list, _ := msgs["messages"].([]any)
		if status != 200 || len(list) == 0 {
			t.Fatalf("messages of %s: %d %v", thread, status, msgs)
		}
		first := list[0].(map[string]any)
		if first["id"] != id || first["from"] != "api:user-operator" || first["payload"] != "<Greeting><Name>Ann</Name></Greeting>" {
			t.Errorf("%s: first journaled message %v, want id %s", in.name, first, id)
		}
	}

	// The conversation's every thread, in order.
	status, conv, _ := f.do("GET", "/api/v1/threads/"+threads[0]+"/messages?scope=conversation", viewer, nil)
	var tags []string
	for _, m := range conv["messages"].([]any) {
		tags = append(tags, m.(map[string]any)["payload_type"].(string))
	}
	if diff := cmp.Diff([]string{"Greeting", "GreetingResponse", "ShoutedResponse"}, tags); status != 200 || diff != "" {
		t.Errorf("conversation messages (-want +got):\n%s", diff)
	}

	status, th, _ := f.do("GET", "/api/v1/threads/"+threads[0], viewer, nil)
	if status != 200 || th["status"] != "completed" || th["message_count"] != 1.0 || th["conversation"] != threads[0] {
		t.Errorf("thread: %d %v", status, th)
	}
	if status, body, _ := f.do("GET", "/api/v1/threads/"+stage.NewThreadID(), viewer, nil); status != 404 {
		t.Errorf("unknown thread: %d %v", status, body)
	}

	status, list, _ := f.do("GET", "/api/v1/threads?limit=2&agent=shouter", viewer, nil)
	ts, _ := list["threads"].([]any)
	if status != 200 || len(ts) != 2 {
		t.Fatalf("threads: %d %v", status, list)
	}
	for _, row := range ts {
		row := row.(map[string]any)
		_, one, _ := f.do("GET", "/api/v1/threads/"+row["id"].(string), viewer, nil)
		if ps, _ := row["participants"].([]any); !slices.Contains(ps, any("shouter")) ||
			!cmp.Equal(one["participants"], row["participants"]) {
			t.Errorf("thread row participants %v, /threads/{id} says %v", row["participants"], one["participants"])
		}
	}
	status, page2, _ := f.do("GET", "/api/v1/threads?limit=2&offset=2&agent=shouter", viewer, nil)
	if ts2, _ := page2["threads"].([]any); status != 200 || len(ts2) == 0 ||
		ts2[0].(map[string]any)["id"] == ts[0].(map[string]any)["id"] {
		t.Errorf("second page: %d %v", status, page2)
	}
	status, done, _ := f.do("GET", "/api/v1/threads?status=completed&limit=1000", viewer, nil)
	if all, _ := done["threads"].([]any); status != 200 || len(all) < 9 {
		t.Errorf("completed threads: %d %d", status, len(all))
	}
	status, msgs, _ := f.do("GET", "/api/v1/messages?limit=3", viewer, nil)
	if m, _ := msgs["messages"].([]any); status != 200 || len(m) != 3 {
		t.Errorf("messages: %d %v", status, msgs)
	}
	status, msgs, _ = f.do("GET", "/api/v1/messages?agent=shouter&limit=1000", viewer, nil)
	if status != 200 {
		t.Errorf("messages of shouter: %d %v", status, msgs)
	}
	for _, m := range msgs["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["from"] != "shouter" && mm["to"] != "shouter" && mm["listener"] != "shouter" {
			t.Errorf("agent filter let %v through", mm)
		}
	}

	for _, bad := range []struct {
		body   any
		status int
		want   string
	}{
		{map[string]any{"payload": map[string]string{"name": "x"}}, 400, "Missing to"},
		{map[string]any{"to": "greeter"}, 400, "Missing payload"},
		{map[string]any{"to": "nobody", "payload": "<x/>"}, 400, "Unknown target: nobody"},
		{map[string]any{"to": "greeter", "payload": map[string]string{"age": "1"}}, 400,
			`Invalid payload for greeter: unknown field "age" (the fields are Name)`},
		{map[string]any{"to": "greeter", "payload": map[string]any{"name": 5}}, 400,
			`Invalid payload for greeter: Name: want a string, got the number 5`},
		{map[string]any{"to": "greeter", "payload": "<a/><b/>"}, 400, "Invalid payload: payload has more than one root element"},
		{map[string]any{"to": "greeter", "payload": "<Greeting><Nom>x</Nom></Greeting>"}, 422, failure.HuhPayload},
		{map[string]any{"to": "greeter", "payload": "<x/>", "thread_id": "nope"}, 400,
			"Invalid thread_id: want a lower-case UUID"},
		{"{", 400, "Invalid JSON"},
	} {
		status, body, _ := f.do("POST", "/api/v1/inject", op, bad.body)
		if status != bad.status || body["error"] != bad.want {
			t.Errorf("inject %v: %d %v, want %d %q", bad.body, status, body, bad.status, bad.want)
		}
	}
	for _, q := range []string{"limit=0", "limit=x", "offset=-1", "since=yesterday", "status=lost"} {
		if status, body, _ := f.do("GET", "/api/v1/threads?"+q, viewer, nil); status != 400 {
			t.Errorf("threads?%s: %d %v", q, status, body)
		}
	}
}

// controller records stop and reload requests; a reload fails with
// reloadErr.
type controller struct {
	mu        sync.Mutex
	calls     []string
	reloadErr error
}

func (c *controller) Stop(context.Context) error { return c.record("stop", nil) }
func (c *controller) Reload(context.Context) error {
	c.mu.Lock()
	err := c.reloadErr
	c.mu.Unlock()
	return c.record("reload", err)
}
func (c *controller) record(what string, err error) error {
	c.mu.Lock()
	c.calls = append(c.calls, what)
	c.mu.Unlock()
	return err
}

func TestAPIControl(t *testing.T) {
	ctl := &controller{}
	f := newFixture(t, func(o *Options) { o.Controller = ctl })
	admin := f.tokens()[auth.Admin]

	status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", admin, nil)
	if status != 200 || body["state"] != "paused" || !f.org.Pump.Paused("shouter") {
		t.Fatalf("pause: %d %v", status, body)
	}
	// A conversation waits at the paused shouter: its thread is active and
	// can be killed.
	status, inj, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "greeter", "payload": map[string]string{"name": "Kim"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, inj)
	}
	thread := inj["thread_id"].(string)
	status, body, _ = f.do("POST", "/api/v1/threads/"+thread+"/kill", admin, nil)
	if status != 200 || body["status"] != "killed" || body["thread_id"] != thread {
		t.Fatalf("kill: %d %v", status, body)
	}
	status, body, _ = f.do("POST", "/api/v1/agents/shouter/resume", admin, nil)
	if status != 200 || body["state"] == "paused" || f.org.Pump.Paused("shouter") {
		t.Fatalf("resume: %d %v", status, body)
	}
	f.waitJournal()
	if status, body, _ := f.do("GET", "/api/v1/threads/"+thread, admin, nil); status != 200 || body["status"] != "killed" {
		t.Errorf("killed thread: %d %v", status, body)
	}
	if status, body, _ := f.do("POST", "/api/v1/agents/nobody/pause", admin, nil); status != 404 {
		t.Errorf("pause unknown: %d %v", status, body)
	}
	if status, body, _ := f.do("POST", "/api/v1/organism/reload", admin, nil); status != 200 || body["status"] != "reloaded" {
		t.Errorf("reload: %d %v", status, body)
	}
	ctl.mu.Lock()
	ctl.reloadErr = fmt.Errorf("%w: organism.yaml:4: organism.port changed", organism.ErrReloadRefused)
	ctl.mu.Unlock()
	status, body, _ = f.do("POST", "/api/v1/organism/reload", admin, nil)
	if diff := cmp.Diff(map[string]any{"error": "reload refused: organism.yaml:4: organism.port changed"}, body); status != 422 || diff != "" {
		t.Errorf("refused reload: %d (-want +got):\n%s", status, diff)
	}
	if status, body, _ := f.do("POST", "/api/v1/organism/stop", admin, nil); status != 202 {
		t.Errorf("stop: %d %v", status, body)
	}
	if diff := cmp.Diff([]string{"reload", "reload", "stop"}, ctl.calls); diff != "" {
		t.Errorf("controller calls (-want +got):\n%s", diff)
	}
}

func TestSanitized(t *testing.T) {
	in := map[string]any{
		"llm": map[string]any{"backends": []any{
			map[string]any{"provider": "xai", "api_key": "xai-123", "api_key_env": "XAI_API_KEY",
				"base_url": "https://user:pw@example.org/v1"},
		}},
		"listeners": []any{map[string]any{"name": "mailer", "config": map[string]any{"smtp_password": "hunter2",
			"bot_token": "t", "client-secret": "s", "max_tokens": 5, "host": "mail"}}},
	}
	got, err := sanitized(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"llm": map[string]any{"backends": []any{
			map[string]any{"provider": "xai", "api_key": redacted, "api_key_env": "XAI_API_KEY",
				"base_url": "https://%5Bredacted%5D@example.org/v1"},
		}},
		"listeners": []any{map[string]any{"name": "mailer", "config": map[string]any{"smtp_password": redacted,
			"bot_token": redacted, "client-secret": redacted, "max_tokens": 5, "host": "mail"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestMessagesMarkRepairs: a message the organism accepted only after
// repairing it (an unescaped & in a /bus frame) is marked "repaired" in the
// REST API (the dashboard highlights it); a clean one is not.
func TestMessagesMarkRepairs(t *testing.T) {
	f := newFixture(t)
	tokens := f.tokens()
	op, viewer := tokens[auth.Operator], tokens[auth.Viewer]
	completed := f.watchCompletions()
	c := f.dial("/bus", op)
	for _, tt := range []struct {
		name     string
		repaired bool
	}{{"Tom & Jerry", true}, {"Tom", false}} {
		thread := stage.NewThreadID()
		sendRaw(t, c, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-operator</from>`+
			`<to>greeter</to><thread>`+thread+`</thread></meta><Greeting xmlns=""><Name>`+tt.name+`</Name></Greeting></message>`)
		completed.wait(t, thread)
		f.waitJournal()
		status, msgs, _ := f.do("GET", "/api/v1/threads/"+thread+"/messages", viewer, nil)
		list, _ := msgs["messages"].([]any)
		if status != 200 || len(list) == 0 {
			t.Fatalf("messages of %s: %d %v", thread, status, msgs)
		}
		first := list[0].(map[string]any)
		if got, _ := first["repaired"].(bool); got != tt.repaired {
			t.Errorf("%q: repaired = %v, want %v (%v)", tt.name, first["repaired"], tt.repaired, first)
		}
	}
}
