package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Leak is the payload of the leaky listener, whose handler fails as its
// Note says: "url" with an error naming an internal URL and path, "panic"
// with a panic naming a path, "input" with an *xmlpipe.InputError; "hold"
// waits until its conversation is killed.
type Leak struct {
	Note string
}

// What the leaky listener's failures say.
const (
	leakURL   = "https://vault.internal:8443/v1/secret"
	leakPath  = "/etc/xmlpipe/keys/backend.pem"
	inputText = "Note must name a thing to fetch"
)

const leakyYAML = `organism: {name: leaky}
profiles:
  tenant:
    listeners: [leaky]
listeners:
  - name: leaky
    payload_class: test.Leak
    handler: test.Leak
    description: Fails as its note says
`

// leakyOrganism builds the leaky organism; held receives the thread of
// each held handling.
func leakyOrganism(held chan<- string) buildFunc {
	c := catalog.Builtin()
	c.AddPayload(catalog.Payload{Name: "test.Leak", Type: reflect.TypeFor[Leak]()})
	c.AddHandler(catalog.Handler{Name: "test.Leak", Takes: reflect.TypeFor[Leak](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, p *Leak, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				switch p.Note {
				case "url":
					return nil, fmt.Errorf("fetch %s with %s: connection refused", leakURL, leakPath)
				case "panic":
					panic("cannot read " + leakPath)
				case "input":
					return nil, fmt.Errorf("leaky: %w", &xmlpipe.InputError{Err: errors.New(inputText)})
				case "hold":
					held <- md.ThreadID
					<-ctx.Done()
					return nil, context.Cause(ctx)
				}
				return nil, nil
			})
		}})
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("leaky.yaml", []byte(leakyYAML))
		if err != nil {
			return nil, err
		}
		o.Catalog = c
		return organism.New(cfg, o)
	}
}

// TestWSHuhDetailByRole: over real TLS WebSockets, a handler's failure on
// a /ws send reaches its sender as a huh frame with the canned text. An
// operator without a profile, who runs the organism, also reads the
// handler's error chain or panic value; an operator confined to a profile
// reads none of it — not the URL, not the path. The text of a handler's
// *xmlpipe.InputError, written for the sender, reaches both.
func TestWSHuhDetailByRole(t *testing.T) {
	f := newFixtureWith(t, leakyOrganism(make(chan string)))
	secret := f.user("tenant", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "tenant", "tenant"); err != nil {
		t.Fatal(err)
	}
	tenant := f.login("tenant", secret)
	f.nextStep()
	op := f.loginAs("op", auth.Operator)

	inputDiag := []any{failure.Diagnostic{Stage: failure.StageHandler, Msg: inputText}.String()}
	tests := []struct {
		user, token, note string
		// leaks are texts the diagnostics must hold (nil: there must be
		// none); want, when set, are the diagnostics exactly.
		leaks []string
		want  []any
	}{
		{"op", op, "url", []string{leakURL, leakPath}, nil},
		{"op", op, "panic", []string{"panicked", leakPath}, nil},
		{"op", op, "input", []string{inputText}, nil},
		{"tenant", tenant, "url", nil, nil},
		{"tenant", tenant, "panic", nil, nil},
		{"tenant", tenant, "input", nil, inputDiag},
	}
	sockets := map[string]*websocket.Conn{}
	for _, tt := range tests {
		c := sockets[tt.user]
		if c == nil {
			c = f.dial("/ws", tt.token)
			readFrame(t, c) // connected
			sockets[tt.user] = c
		}
		writeFrame(t, c, frame{"type": "send", "target": "leaky", "content": tt.note})
		sent := readFrame(t, c)
		conv, _ := sent["thread_id"].(string)
		if sent["type"] != "sent" {
			t.Fatalf("%s %s: got %v, want sent", tt.user, tt.note, sent)
		}
		var huh frame
		for _, fr := range conversation(t, c, conv) {
			if fr["type"] == "huh" {
				huh = fr
			}
		}
		if huh == nil {
			t.Fatalf("%s %s: no huh frame", tt.user, tt.note)
		}
		if huh["error"] != failure.HuhProcessing {
			t.Errorf("%s %s: error %q, want the canned %q", tt.user, tt.note, huh["error"], failure.HuhProcessing)
		}
		diags, _ := huh["diagnostics"].([]any)
		if tt.want != nil {
			if diff := cmp.Diff(tt.want, diags); diff != "" {
				t.Errorf("%s %s: diagnostics (-want +got):\n%s", tt.user, tt.note, diff)
			}
			continue
		}
		all := fmt.Sprint(diags)
		if tt.leaks == nil && len(diags) > 0 {
			t.Errorf("%s %s: diagnostics %s reach a user confined to a profile", tt.user, tt.note, all)
		}
		for _, l := range tt.leaks {
			if !strings.Contains(all, l) {
				t.Errorf("%s %s: diagnostics %s do not say %q", tt.user, tt.note, all, l)
			}
		}
	}
}

// TestStreamDeadLetterDetailByRole: the event stream tells every user of
// a dead letter on a conversation — here the answer of a killed handler —
// but only an operator or admin without a profile reads its reason; a
// viewer reads the canned text.
func TestStreamDeadLetterDetailByRole(t *testing.T) {
	held := make(chan string, 1)
	f := newFixtureWith(t, leakyOrganism(held))
	admin := f.loginAs("admin", auth.Admin)
	f.nextStep()
	viewer := f.loginAs("viewer", auth.Viewer)
	stream := func(token string) *websocket.Conn {
		c := f.dial("/api/v1/ws", token)
		if got := readFrame(t, c); got["event"] != "connected" {
			t.Fatalf("first frame %v", got)
		}
		writeFrame(t, c, frame{"cmd": "subscribe", "events": []string{"error"}})
		if got := readFrame(t, c); got["event"] != "subscribed" {
			t.Fatalf("subscribe: %v", got)
		}
		return c
	}
	adminStream, viewerStream := stream(admin), stream(viewer)

	status, body, _ := f.do("POST", "/api/v1/inject", admin, map[string]any{"to": "leaky",
		"payload": map[string]string{"note": "hold"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, body)
	}
	conv, _ := body["thread_id"].(string)
	<-held
	if status, body, _ := f.do("POST", "/api/v1/threads/"+conv+"/kill", admin, nil); status != 200 {
		t.Fatalf("kill: %d %v", status, body)
	}
	deadLetter := func(c *websocket.Conn) string {
		t.Helper()
		for {
			got := readFrame(t, c)
			if got["kind"] == "dead-letter" && got["thread_id"] == conv {
				s, _ := got["error"].(string)
				return s
			}
		}
	}
	if got := deadLetter(adminStream); !strings.Contains(got, "conversation killed") {
		t.Errorf("admin reads the dead letter as %q, want its reason", got)
	}
	if got := deadLetter(viewerStream); got != failure.Undelivered {
		t.Errorf("viewer reads the dead letter as %q, want %q", got, failure.Undelivered)
	}
}

// TestEncodeFailureDetail: the huh and dead_letter frames of one event as
// a socket that sees failures' details encodes them and as one that does
// not: the latter keeps only the diagnostics of the client's own refused
// message and an InputError's text, and reads a dead letter as the canned
// text; a frame without diagnostics costs it no extra allocation.
func TestEncodeFailureDetail(t *testing.T) {
	handlerErr := fmt.Errorf("%w: leaky: fetch %s: refused", failure.ErrHandler, leakURL)
	inputErr := fmt.Errorf("%w: leaky: %w", failure.ErrHandler, &xmlpipe.InputError{Err: errors.New(inputText)})
	stageErr := &failure.Failure{Stage: failure.StagePayload, Err: failure.ErrPayloadInvalid}
	ownDiag := "payload line 1 /Leak: element Age not expected"
	tests := []struct {
		name       string
		ev         pump.Event
		wantError  string // for the socket without details
		wantDiags  []any  // likewise (nil: none)
		detailDiag []any  // for the socket with details
	}{
		{"handler error", pump.Event{Kind: pump.EventHuh, Listener: "leaky", Error: failure.HuhProcessing,
			Diagnostics: []string{"handler: " + handlerErr.Error()}, Cause: handlerErr},
			failure.HuhProcessing, nil, []any{"handler: " + handlerErr.Error()}},
		{"input error", pump.Event{Kind: pump.EventHuh, Listener: "leaky", Error: failure.HuhProcessing,
			Diagnostics: []string{"handler: " + inputErr.Error()}, Cause: inputErr},
			failure.HuhProcessing, []any{"handler: " + inputText}, []any{"handler: " + inputErr.Error()}},
		{"own message refused", pump.Event{Kind: pump.EventHuh, Error: failure.HuhPayload,
			Diagnostics: []string{ownDiag}, Cause: stageErr},
			failure.HuhPayload, []any{ownDiag}, []any{ownDiag}},
		{"handler error naming no listener", pump.Event{Kind: pump.EventHuh, Error: failure.HuhProcessing,
			Diagnostics: []string{leakPath}, Cause: handlerErr},
			failure.HuhProcessing, nil, []any{leakPath}},
		{"no cause", pump.Event{Kind: pump.EventHuh, Error: failure.HuhProcessing, Diagnostics: []string{leakPath}},
			failure.HuhProcessing, nil, []any{leakPath}},
		{"dead letter", pump.Event{Kind: pump.EventDeadLetter, Error: "error handler failed: " + leakURL},
			failure.Undelivered, nil, nil},
	}
	decode := func(w *wsSocket, e pump.Event) frame {
		t.Helper()
		_, data, err := w.encode(e)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		var got frame
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("not JSON: %v: %s", err, data)
		}
		return got
	}
	for _, tt := range tests {
		tt.ev.Conversation = "c1"
		got := decode(&wsSocket{}, tt.ev)
		diags, _ := got["diagnostics"].([]any)
		if got["error"] != tt.wantError {
			t.Errorf("%s: without details: error %q, want %q", tt.name, got["error"], tt.wantError)
		}
		if diff := cmp.Diff(tt.wantDiags, diags); diff != "" {
			t.Errorf("%s: without details: diagnostics (-want +got):\n%s", tt.name, diff)
		}
		got = decode(&wsSocket{details: true}, tt.ev)
		diags, _ = got["diagnostics"].([]any)
		if got["error"] != tt.ev.Error {
			t.Errorf("%s: with details: error %q, want %q", tt.name, got["error"], tt.ev.Error)
		}
		if diff := cmp.Diff(tt.detailDiag, diags); diff != "" {
			t.Errorf("%s: with details: diagnostics (-want +got):\n%s", tt.name, diff)
		}
	}

	plain := pump.Event{Kind: pump.EventHuh, Conversation: "c1", Listener: "leaky", Error: failure.HuhProcessing}
	allocs := func(w *wsSocket) float64 {
		w.encode(plain) // the buffer the writer reuses
		return testing.AllocsPerRun(100, func() { _, _, _ = w.encode(plain) })
	}
	if with, without := allocs(&wsSocket{details: true}), allocs(&wsSocket{}); without > with {
		t.Errorf("a huh frame without diagnostics: %v allocations without details, %v with", without, with)
	}
}

// TestAPIJournalDetailByRole: the REST journal and agent endpoints give a
// handler's failure, with its URL and path, to an operator or admin
// without a profile only: a viewer, and the profile-confined operator
// whose conversation it was, read the huh's canned text, no handler
// diagnostics and a canned last_error.
func TestAPIJournalDetailByRole(t *testing.T) {
	f := newFixtureWith(t, leakyOrganism(make(chan string)))
	secret := f.user("tenant", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "tenant", "tenant"); err != nil {
		t.Fatal(err)
	}
	tenant := f.login("tenant", secret)
	f.nextStep()
	op := f.loginAs("op", auth.Operator)
	f.nextStep()
	viewer := f.loginAs("viewer", auth.Viewer)

	completed := make(chan string, 64)
	stop := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			select { // an outlet never blocks the pump
			case completed <- e.Conversation:
			default:
			}
		}
	}))
	defer stop()
	status, body, _ := f.do("POST", "/api/v1/inject", tenant, map[string]any{"to": "leaky",
		"payload": map[string]string{"note": "url"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, body)
	}
	conv, _ := body["thread_id"].(string)
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for done := false; !done; {
		select {
		case c := <-completed:
			done = c == conv
		case <-timer.C:
			t.Fatal("the conversation did not complete")
		}
	}

	for _, tc := range []struct {
		user, token string
		details     bool
	}{{"op", op, true}, {"tenant", tenant, false}, {"viewer", viewer, false}} {
		status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages", tc.token, nil)
		if status != 200 {
			t.Fatalf("%s: messages: %d %v", tc.user, status, body)
		}
		var huh map[string]any
		for _, m := range body["messages"].([]any) {
			if m := m.(map[string]any); m["kind"] == "huh" {
				huh = m
			}
		}
		if huh == nil {
			t.Fatalf("%s: no huh in %v", tc.user, body)
		}
		diags := fmt.Sprint(huh["diagnostics"])
		if got := strings.Contains(diags, leakURL); got != tc.details {
			t.Errorf("%s: the huh's diagnostics %s name the handler's URL: %t, want %t", tc.user, diags, got, tc.details)
		}
		status, body, _ = f.do("GET", "/api/v1/agents/leaky", tc.token, nil)
		if status != 200 {
			t.Fatalf("%s: agent: %d %v", tc.user, status, body)
		}
		lastErr, _ := body["last_error"].(string)
		if got := strings.Contains(lastErr, leakURL); got != tc.details {
			t.Errorf("%s: last_error %q names the handler's URL: %t, want %t", tc.user, lastErr, got, tc.details)
		}
		if !tc.details && lastErr != failure.HuhProcessing {
			t.Errorf("%s: last_error %q, want the canned %q", tc.user, lastErr, failure.HuhProcessing)
		}
	}
}

// TestJournalDiagnostics: what a user not told the details reads of each
// kind of journal entry's diagnostics.
func TestJournalDiagnostics(t *testing.T) {
	own := failure.Diagnostic{Stage: failure.StagePayload, Line: 1, Path: "/Leak", Msg: "element Age not expected"}.String()
	route := failure.Diagnostic{Stage: failure.StageRoute, Msg: `no listener named "nobody"`}.String()
	handler := failure.Diagnostic{Stage: failure.StageHandler, Msg: "handler failed: leaky: fetch " + leakURL}.String()
	input := failure.Diagnostic{Stage: failure.StageInput, Msg: inputText}.String()
	tests := []struct {
		name  string
		kind  store.Kind
		lines []string
		want  []string
	}{
		{"huh of a refused message", store.Huh, []string{own, route}, []string{own, route}},
		{"huh of a handler failure", store.Huh, []string{handler}, nil},
		{"huh of a handler's input error", store.Huh, []string{handler, input}, []string{input}},
		{"system error", store.SystemError, []string{handler, own}, []string{own}},
		{"dead letter", store.DeadLetter, []string{"error handler failed: " + leakURL}, []string{failure.Undelivered}},
		{"refusal", store.Refusal, []string{"denied by olga: too risky"}, []string{"denied by olga: too risky"}},
		{"no diagnostics", store.DeadLetter, nil, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, journalDiagnostics(tt.kind, tt.lines, false)); diff != "" {
			t.Errorf("%s: without details (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.lines, journalDiagnostics(tt.kind, tt.lines, true)); diff != "" {
			t.Errorf("%s: with details (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestAPIJournalInputErrorByRole: the text of a handler's
// *xmlpipe.InputError, written for the sender, is in the REST journal's
// <huh> diagnostics for every user who may read the conversation — the
// profile-confined operator whose conversation it was and a viewer too,
// as on their live frames — while the handler's error chain around it
// stays the operators'.
func TestAPIJournalInputErrorByRole(t *testing.T) {
	f := newFixtureWith(t, leakyOrganism(make(chan string)))
	secret := f.user("tenant", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "tenant", "tenant"); err != nil {
		t.Fatal(err)
	}
	tenant := f.login("tenant", secret)
	f.nextStep()
	op := f.loginAs("op", auth.Operator)
	f.nextStep()
	viewer := f.loginAs("viewer", auth.Viewer)

	completed := make(chan string, 64)
	stop := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventComplete {
			select { // an outlet never blocks the pump
			case completed <- e.Conversation:
			default:
			}
		}
	}))
	defer stop()
	status, body, _ := f.do("POST", "/api/v1/inject", tenant, map[string]any{"to": "leaky",
		"payload": map[string]string{"note": "input"}})
	if status != 200 {
		t.Fatalf("inject: %d %v", status, body)
	}
	conv, _ := body["thread_id"].(string)
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for done := false; !done; {
		select {
		case c := <-completed:
			done = c == conv
		case <-timer.C:
			t.Fatal("the conversation did not complete")
		}
	}
	f.waitJournal()

	input := failure.Diagnostic{Stage: failure.StageInput, Msg: inputText}.String()
	chain := "leaky: " + inputText // the handler's error around it
	for _, tc := range []struct {
		user, token string
		details     bool
	}{{"op", op, true}, {"tenant", tenant, false}, {"viewer", viewer, false}} {
		status, body, _ := f.do("GET", "/api/v1/threads/"+conv+"/messages", tc.token, nil)
		if status != 200 {
			t.Fatalf("%s: messages: %d %v", tc.user, status, body)
		}
		var diags []string
		found := false
		for _, m := range body["messages"].([]any) {
			if m := m.(map[string]any); m["kind"] == "huh" {
				found = true
				ds, _ := m["diagnostics"].([]any)
				for _, d := range ds {
					diags = append(diags, fmt.Sprint(d))
				}
			}
		}
		if !found {
			t.Fatalf("%s: no huh in %v", tc.user, body)
		}
		if !slices.Contains(diags, input) {
			t.Errorf("%s: the huh's diagnostics %q lack the input error's %q", tc.user, diags, input)
		}
		if got := slices.ContainsFunc(diags, func(d string) bool { return strings.Contains(d, chain) }); got != tc.details {
			t.Errorf("%s: the huh's diagnostics %q hold the handler's error chain: %t, want %t", tc.user, diags, got,
				tc.details)
		}
	}
}
