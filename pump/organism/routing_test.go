package organism

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/route"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// helloWithTools is the hello-world organism whose greeter lists every
// native tool.
const helloWithTools = `organism: {name: route-test}
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greeting agent - forwards to shouter
    agent: true
    peers: [shouter]
    tools: [calculate, files, fetch, key_value, web_search, run_command, xml_to_json, json_to_xml, xml_extract]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints responses to console
`

func quietOptions() Options { return Options{Logger: slog.New(slog.DiscardHandler)} }

func startOrganism(t *testing.T, yaml string) *Organism {
	t.Helper()
	o := loadOrganism(t, yaml)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

// loadOrganism loads yaml's organism (not started) and shuts it down when
// the test ends: loading opens its stores.
func loadOrganism(t *testing.T, yaml string) *Organism {
	t.Helper()
	o, err := Load(writeOrganism(t, yaml), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return o
}

func candidateNames(cs []route.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// "I need to multiply six by seven" finds calculate, fills its expression
// and sends it through the pump, whose answer comes back.
func TestRouteMultiply(t *testing.T) {
	o := startOrganism(t, helloWithTools)
	r, err := o.Router()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := r.Rank(ctx, "I need to multiply six by seven", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 || cs[0].Name != "calculate" {
		t.Fatalf("ranked %v, want calculate first", candidateNames(cs))
	}
	for _, c := range cs {
		if organismOwn(c.Name) {
			t.Fatalf("the organism's own listener %s is a candidate", c.Name)
		}
	}
	res, err := r.WithDispatcher(o.RouteDispatcher("route-test")).Route(ctx, "I need to multiply six by seven", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Selected.Name != "calculate" || !strings.Contains(string(res.Dispatched.Answer), "<Value>42</Value>") {
		t.Fatalf("routed to %s with %s: answer %s", res.Selected.Name, res.Fill.Payload, res.Dispatched.Answer)
	}
}

// An agent whose peers do not include files is never answered with files,
// however well a file request matches it; the filler never sees files.
func TestRouteMaskedFiles(t *testing.T) {
	o := startOrganism(t, `organism: {name: masked}
listeners:
  - name: researcher
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Researches questions
    agent: true
    peers: [shouter]
    tools: [calculate, fetch]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
  - name: files
    payload_class: tools.Files
    handler: tools.Files
    description: Reads, writes, lists and deletes files inside the configured roots
`)
	r, err := o.Router()
	if err != nil {
		t.Fatal(err)
	}
	mask, err := o.PeersMask("researcher")
	if err != nil || mask == nil {
		t.Fatalf("PeersMask: %v, %v", mask, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Unmasked, files is what a file request finds.
	if cs, _ := r.Rank(ctx, "read the notes file", nil, 0); len(cs) == 0 || cs[0].Name != "files" {
		t.Fatalf("unmasked: %v, want files first", candidateNames(cs))
	}
	var filled []string
	filler := route.FillerFunc(func(ctx context.Context, need string, c route.Capability) (route.Filled, error) {
		filled = append(filled, c.Name)
		return route.Extractive{}.Fill(ctx, need, c)
	})
	masked, err := route.New(route.Config{Source: routeSource{o.Pump}, Filler: filler,
		Dispatcher: o.RouteDispatcher("route-test")})
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{"read the notes file", "read notes/todo.txt", "delete the temp files", "list the files"} {
		res, err := masked.Route(ctx, need, mask)
		for _, c := range res.Candidates {
			if c.Name == "files" {
				t.Errorf("%q: files is a candidate: %v", need, candidateNames(res.Candidates))
			}
		}
		if err == nil && res.Selected.Name == "files" {
			t.Errorf("%q was answered with files", need)
		}
		if err != nil && !errors.Is(err, route.ErrNoCapability) && !errors.Is(err, route.ErrFill) {
			t.Errorf("%q: %v", need, err)
		}
	}
	for _, n := range filled {
		if n == "files" {
			t.Fatal("the filler ran for files")
		}
	}
	// The calculator the researcher may use is still found.
	res, err := masked.Route(ctx, "multiply six by seven", mask)
	if err != nil || !strings.Contains(string(res.Dispatched.Answer), "<Value>42</Value>") {
		t.Fatalf("calculate through the mask: %v %s", err, res.Dispatched.Answer)
	}
}

// The router is advisory: what it sends goes through the pump's checks. A
// payload the schema refuses is refused by the pump, not delivered.
func TestRouteAdvisory(t *testing.T) {
	o := startOrganism(t, helloWithTools)
	bad := route.FillerFunc(func(_ context.Context, _ string, c route.Capability) (route.Filled, error) {
		return route.Filled{Payload: []byte(`<Calculate xmlns=""><Nope>1</Nope></Calculate>`), By: "test"}, nil
	})
	r, err := route.New(route.Config{Source: routeSource{o.Pump}, Filler: bad, Dispatcher: o.RouteDispatcher("route-test")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Route(ctx, "multiply six by seven", nil)
	if err == nil || res.Dispatched.Answer != nil || !strings.Contains(err.Error(), "dispatch to calculate") {
		t.Fatalf("an invalid payload was delivered: %v %s", err, res.Dispatched.Answer)
	}
	t.Logf("refused by the pump: %v", err)
	// A sender the pump refuses (a listener's name) is refused too.
	r2, _ := route.New(route.Config{Source: routeSource{o.Pump}, Dispatcher: o.RouteDispatcher("shouter")})
	if _, err := r2.Route(ctx, "multiply six by seven", nil); err == nil {
		t.Fatal("a forged sender was accepted")
	} else {
		t.Logf("forged sender: %v", err)
	}
}

// The index follows the routing table: a listener added while running (as
// OOB registers one) is routable at the next request; removed, it is gone;
// a reload's listeners likewise.
func TestRouteIndexFollowsListeners(t *testing.T) {
	const base = `organism: {name: follow}
listeners:
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts the greeting in ALL CAPS
`
	path := writeOrganism(t, base)
	o, err := Load(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	r, err := o.Router()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := func() string {
		t.Helper()
		cs, err := r.Rank(ctx, "multiply six by seven", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			return ""
		}
		return cs[0].Name
	}
	if got := first(); got == "calculate" {
		t.Fatal("calculate before it exists")
	}
	if err := o.AddListener(config.Listener{Name: "calculate", PayloadClass: "tools.Calculate", Handler: "tools.Calculate",
		Description: "Evaluates an arithmetic expression"}); err != nil {
		t.Fatal(err)
	}
	if got := first(); got != "calculate" {
		t.Fatalf("after AddListener: %q first", got)
	}
	if err := o.RemoveListener(ctx, "calculate"); err != nil {
		t.Fatal(err)
	}
	if got := first(); got == "calculate" {
		t.Fatal("calculate still ranked after its removal")
	}
	cfg, err := config.Parse(path, []byte(base+`  - name: calc
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates an arithmetic expression
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if got := first(); got != "calc" {
		t.Fatalf("after a reload adding calc: %q first", got)
	}
}

func TestRouteProfiles(t *testing.T) {
	o := loadOrganism(t, helloWithTools)
	_, err := o.ProfileMask("researcher")
	if !errors.Is(err, ErrUnknownProfile) || !strings.Contains(err.Error(), `unknown profile "researcher"`) ||
		!strings.Contains(err.Error(), "defines no profiles") {
		t.Fatalf("ProfileMask without profiles: %v", err)
	}
	if m, err := o.ProfileMask(""); m != nil || err != nil {
		t.Fatalf("no profile: %v %v", m, err)
	}
	o = loadOrganism(t, helloWithTools+"profiles:\n  calc-only: {listeners: [calculate]}\n  web: {listeners: [fetch, \"x*\"]}\n")
	m, err := o.ProfileMask("calc-only")
	if err != nil || !m("calculate") || m("files") || m("greeter") {
		t.Fatalf("calc-only: %v", err)
	}
	m, err = o.ProfileMask("web")
	if err != nil || !m("fetch") || !m("xml_to_json") || !m("xml_extract") || m("json_to_xml") || m("calculate") {
		t.Fatalf("web: %v", err)
	}
	if m, err := o.ProfileMask("calc-only&web"); err != nil || m("calculate") || m("fetch") {
		t.Fatalf("an intersection: %v", err)
	}
	if _, err := o.ProfileMask("other"); !errors.Is(err, ErrUnknownProfile) || !strings.Contains(err.Error(), "calc-only") {
		t.Fatalf("unknown: %v", err)
	}
	// Profile names are keys, as the configuration and users' records
	// name them: another case names no profile, with a hint.
	for _, tc := range []struct{ name, want string }{
		{"Calc-Only", `unknown profile "Calc-Only" (did you mean "calc-only"?) (profiles: calc-only, web)`},
		{"calc-only&WEB", `unknown profile "WEB" (did you mean "web"?)`},
		// A name of no term is no profile either (not "no profile": every
		// listener).
		{" ", `unknown profile " " (profiles: calc-only, web)`},
		{"&", `unknown profile "&" (profiles: calc-only, web)`},
		{" & ", `unknown profile " & " (profiles: calc-only, web)`},
	} {
		if m, err := o.ProfileMask(tc.name); !errors.Is(err, ErrUnknownProfile) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("ProfileMask(%q) = %v, %v; want %q", tc.name, m != nil, err, tc.want)
		}
	}
	if v := o.VisibleTo("other"); v == nil || v("calculate") {
		t.Fatal("an undefined profile sees something")
	}
	if m, err := o.PeersMask("shouter"); m != nil || err != nil {
		t.Fatalf("a listener that is no agent: %v %v", m, err)
	}
	if _, err := o.PeersMask("nobody"); err == nil {
		t.Fatal("PeersMask of a missing listener")
	}
}

// routing: in organism.yaml — fill models served by the llm: backends
// (checked at load, with file:line), an embeddings endpoint with its key.
func TestRouteConfig(t *testing.T) {
	_, err := Load(writeOrganism(t, helloWithTools+"routing: {fill_models: [cheap]}\n"), quietOptions())
	if err == nil || !strings.Contains(err.Error(), "routing.fill_models[0]") || !strings.Contains(err.Error(), "needs an LLM backend") {
		t.Fatalf("fill model without a backend: %v", err)
	}
	_, err = Load(writeOrganism(t, helloWithTools+"llm: {backends: [{provider: anthropic, api_key: k}]}\nrouting: {fill_models: [gpt-4o-mini]}\n"), quietOptions())
	if err == nil || !strings.Contains(err.Error(), "organism.yaml:") || !strings.Contains(err.Error(), "served by no configured backend") {
		t.Fatalf("fill model no backend serves: %v", err)
	}

	// An embeddings endpoint whose key variable is unset.
	t.Setenv("XMLPIPE_TEST_EMBED_KEY", "")
	o := loadOrganism(t, helloWithTools+
		"routing: {embeddings: {provider: openai, model: m, api_key_env: XMLPIPE_TEST_EMBED_KEY}}\n")
	if _, err := o.Router(); err == nil || !strings.Contains(err.Error(), "XMLPIPE_TEST_EMBED_KEY is not set") {
		t.Fatalf("unset key: %v", err)
	}
}

// With an ollama embeddings endpoint and fill models on a loopback OpenAI
// backend, the organism's router ranks with the endpoint's vectors and
// fills with the ladder.
func TestRouteEndpointAndLadder(t *testing.T) {
	embed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Input []string `json:"input"`
		}
		if r.URL.Path != "/api/embed" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":"bad request"}`, 400)
			return
		}
		out := make([][]float32, len(body.Input))
		for i, s := range body.Input {
			// Two dimensions: arithmetic-ness and everything else.
			s = strings.ToLower(s)
			if strings.Contains(s, "arithmetic") || strings.Contains(s, "multiply") {
				out[i] = []float32{1, 0.1}
			} else {
				out[i] = []float32{0.1, 1}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "m", "embeddings": out})
	}))
	defer embed.Close()
	var models []string
	chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(b, &body)
		models = append(models, body.Model)
		content := `{"Expression": "6*7"}`
		if body.Model == "cheap" {
			content = `{"Expr": "6*7"}`
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": body.Model, "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
	}))
	defer chat.Close()
	o := loadOrganism(t, helloWithTools+`llm:
  retries: 0
  backends: [{provider: openai, base_url: "`+chat.URL+`"}]
routing:
  embeddings: {provider: ollama, model: m, base_url: "`+embed.URL+`"}
  fill_models: [cheap, strong]
`)
	r, err := o.Router()
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(context.Background(), "I need to multiply six by seven", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Selected.Name != "calculate" || p.Fill.By != "strong" || string(p.Fill.Payload) != `<Calculate xmlns=""><Expression>6*7</Expression></Calculate>` {
		t.Fatalf("plan: %s by %s: %s", p.Selected.Name, p.Fill.By, p.Fill.Payload)
	}
	if strings.Join(models, ",") != "cheap,strong" {
		t.Fatalf("models asked: %v", models)
	}
}
