package bus

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Chore is the payload of the chore listener: a Note beginning "hold"
// makes its handler wait for the test's release, one containing "fail"
// makes it fail with the note in its error.
type Chore struct {
	Note string
}

const scopedYAML = `organism: {name: scoped}
profiles:
  calc:
    listeners: [chore, calculate]
listeners:
  - name: chore
    payload_class: test.Chore
    handler: test.Chore
    description: Does a chore, or fails at it
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
`

// scopedOrganism builds the chore organism over g (g.entered receives the
// thread of each held chore).
func scopedOrganism(t *testing.T, g *gates) buildFunc {
	t.Cleanup(func() { close(g.done) })
	c := catalog.Builtin()
	c.AddPayload(catalog.Payload{Name: "test.Chore", Type: reflect.TypeFor[Chore]()})
	c.AddHandler(catalog.Handler{Name: "test.Chore", Takes: reflect.TypeFor[Chore](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(_ context.Context, p *Chore, md xmlpipe.Metadata) (xmlpipe.Response, error) {
				if strings.HasPrefix(p.Note, "hold") {
					g.entered <- md.ThreadID
					select {
					case <-g.release:
					case <-g.done:
					}
				}
				if strings.Contains(p.Note, "fail") {
					return nil, errors.New("chore failed: " + p.Note)
				}
				return nil, nil
			})
		}})
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("scoped.yaml", []byte(scopedYAML))
		if err != nil {
			return nil, err
		}
		o.Catalog = c
		return organism.New(cfg, o)
	}
}

// TestProfileScopesCountsAndErrors: over real TLS HTTP and WebSockets, a
// user whose profile reaches chore and calculate is told nothing of what
// happens outside it. While a user without a profile has a chore running
// and another that failed, the calc user's connected frame, /ws status and
// /api/v1/organism count no thread, /api/v1/agents shows chore idle with
// no current thread, no last_error and no organism-wide counters, and
// their agent_state stream stays silent; the user without a profile sees
// all of it. The calc user's own failure is shown to them, with the
// canned text; the user without a profile reads the handler's error.
func TestProfileScopesCountsAndErrors(t *testing.T) {
	g := newGates(t)
	f := newFixtureWith(t, scopedOrganism(t, g))
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Admin)

	// stream opens /api/v1/ws for agent_state events; the connected frame's
	// thread count is returned.
	stream := func(token string) (*websocket.Conn, float64) {
		t.Helper()
		c := f.dial("/api/v1/ws", token)
		first := readFrame(t, c)
		if first["event"] != "connected" {
			t.Fatalf("first frame %v", first)
		}
		writeFrame(t, c, frame{"cmd": "subscribe", "events": []string{"agent_state"}})
		if got := readSubscribed(t, c); got["event"] != "subscribed" {
			t.Fatalf("subscribe: %v", got)
		}
		n, _ := first["threads"].(float64)
		return c, n
	}
	// state waits on c for chore's agent_state event in state (with the
	// current thread cur, "" for null), returning every event read.
	state := func(c *websocket.Conn, want, cur string) []frame {
		t.Helper()
		var seen []frame
		for {
			ev := readFrame(t, c)
			seen = append(seen, ev)
			got, _ := ev["current_thread"].(string)
			if ev["event"] == "agent_state" && ev["agent"] == "chore" && ev["state"] == want && got == cur {
				return seen
			}
		}
	}
	agent := func(token string) map[string]any {
		t.Helper()
		st, body, _ := f.do("GET", "/api/v1/agents/chore", token, nil)
		if st != 200 {
			t.Fatalf("agent chore: %d %v", st, body)
		}
		_, all, _ := f.do("GET", "/api/v1/agents", token, nil)
		for _, a := range all["agents"].([]any) {
			if a := a.(map[string]any); a["name"] == "chore" && !reflect.DeepEqual(a, body) {
				t.Errorf("/api/v1/agents and /api/v1/agents/chore differ:\n%v\n%v", a, body)
			}
		}
		return body
	}
	calcStream, _ := stream(calc)
	openStream, _ := stream(open)

	// A failure outside the profile: its error is not the calc user's.
	f.inject(open, "chore", map[string]string{"note": "fail secret-open"})
	state(openStream, "error", "")
	if a := agent(open); !strings.Contains(a["last_error"].(string), "secret-open") || a["state"] != "error" {
		t.Errorf("the user without a profile: chore %v", a)
	}
	if a := agent(calc); a["last_error"] != nil || a["last_error_at"] != nil || a["state"] != "idle" {
		t.Errorf("the calc user sees a failure outside their profile: %v", a)
	}

	// A chore running outside the profile: no count, state or thread of
	// it for the calc user.
	held := f.inject(open, "chore", map[string]string{"note": "hold open"})
	if th := g.enter(t); th != held {
		t.Fatalf("chore holds %s, injected %s", th, held)
	}
	state(openStream, "processing", held)
	if _, n := stream(calc); n != 0 {
		t.Errorf("the calc user's connected frame counts %v threads", n)
	}
	if _, n := stream(open); n < 1 {
		t.Errorf("the open user's connected frame counts %v threads", n)
	}
	if a := agent(calc); a["state"] != "idle" || a["current_thread"] != nil || a["active"] != 0.0 || a["last_error"] != nil {
		t.Errorf("the calc user sees the chore outside their profile: %v", a)
	}
	// The counts of every thread's work are not shown to the calc user:
	// absent, not zero (which would claim an idle listener).
	for _, key := range []string{"queue_depth", "handled", "last_activity"} {
		if v, ok := agent(calc)[key]; ok {
			t.Errorf("the calc user is shown chore's %s: %v", key, v)
		}
	}
	if a := agent(open); a["state"] != "processing" || a["current_thread"] != held || a["handled"] != 1.0 ||
		a["queue_depth"] != 0.0 || a["last_activity"] == nil {
		t.Errorf("the user without a profile: chore %v", a)
	}
	if _, ok := agent(open)["last_activity"]; !ok {
		t.Error("the user without a profile is not shown chore's last_activity")
	}
	statusOf := func(token string) frame {
		t.Helper()
		c := f.dial("/ws", token)
		readFrame(t, c)
		writeFrame(t, c, frame{"type": "status"})
		return readFrame(t, c)
	}
	openStatus := statusOf(open)
	if openStatus["threads"].(float64) < 1 || openStatus["failed"] != 1.0 || openStatus["profile"] != nil {
		t.Errorf("/ws status for the user without a profile: %v", openStatus)
	}
	all := openStatus["listeners"].(float64) // the organism's own listeners, chore, calculate and greeter
	if st := statusOf(calc); st["threads"] != 0.0 || st["idle_threads"] != 0.0 || st["processed"] != 0.0 ||
		st["failed"] != 0.0 || st["listeners"] != all-1 || st["profile"] != "calc" {
		t.Errorf("/ws status for the calc user (%v listeners in all): %v", all, st)
	}
	_, org, _ := f.do("GET", "/api/v1/organism", calc, nil)
	if org["active_threads"] != 0.0 || org["total_messages"] != 0.0 || org["failed"] != 0.0 ||
		org["agent_count"] != all-1 || org["profile"] != "calc" {
		t.Errorf("/api/v1/organism for the calc user: %v", org)
	}
	_, org, _ = f.do("GET", "/api/v1/organism", open, nil)
	if org["active_threads"].(float64) < 1 || org["failed"] != 1.0 || org["profile"] != nil {
		t.Errorf("/api/v1/organism for the user without a profile: %v", org)
	}
	g.open(t)
	state(openStream, "idle", "") // the chore succeeded

	// The calc user's own chore: the first agent_state event they get is
	// it running — nothing of the failure or the chore before — and its
	// failure is theirs to see.
	mine := f.inject(calc, "chore", map[string]string{"note": "hold fail mine"})
	if th := g.enter(t); th != mine {
		t.Fatalf("chore holds %s, injected %s", th, mine)
	}
	if seen := state(calcStream, "processing", mine); len(seen) != 1 {
		b, _ := json.Marshal(seen)
		t.Errorf("the calc user's stream before their own chore: %s", b)
	} else if v, ok := seen[0]["queue_depth"]; ok {
		t.Errorf("the calc user's agent_state event shows the queue depth %v", v)
	}
	if seen := state(openStream, "processing", mine); seen[len(seen)-1]["queue_depth"] != 0.0 {
		t.Errorf("the agent_state event for the user without a profile: %v", seen[len(seen)-1])
	}
	g.open(t)
	state(calcStream, "error", "")
	// Shown with the canned text: the handler's error is for the
	// organism's operators (errdetail.go).
	if a := agent(calc); a["last_error"] != failure.HuhProcessing || a["last_error_at"] == nil || a["state"] != "error" {
		t.Errorf("the calc user's own failure: %v", a)
	}
	if a := agent(open); !strings.Contains(a["last_error"].(string), "mine") {
		t.Errorf("the user without a profile misses the calc user's failure: %v", a)
	}
}

// profiledAgentOrganism is agentOrganism's poet, talking to the model at
// url, with a profile calc that reaches poet and calculate.
func profiledAgentOrganism(url string) buildFunc {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
profiles:
  calc:
    listeners: [poet, calculate]
llm:
  retries: 0
  backends:
    - provider: openai
      name: local
      base_url: `+url+`
      model: test-model
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}

// TestProfileGovernsDeltas: an LLM agent streams its model's text (a
// loopback chat model) on /api/v1/ws. A user whose profile is calc never
// receives a delta of a conversation outside it — a user without a
// profile's, with the same agent — and receives those of their own; the
// user without a profile receives both. /api/v1/usage/calls lists the
// calc user only the model call of their own conversation.
func TestProfileGovernsDeltas(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n == 0 {
			return []string{"Open ", "verse ", "zero"}
		}
		return []string{"Calc ", "verse ", "one"}
	})
	f := newFixtureWith(t, profiledAgentOrganism(m.URL))
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)
	stream := func(token string) *websocket.Conn {
		t.Helper()
		c := f.dial("/api/v1/ws", token)
		if got := readFrame(t, c); got["event"] != "connected" {
			t.Fatalf("first frame %v", got)
		}
		return c
	}
	calcStream, openStream := stream(calc), stream(open)

	// streamed reads c until conv's deltas spell text and conv completed,
	// returning every frame read.
	streamed := func(c *websocket.Conn, conv, text string) []string {
		t.Helper()
		var seen []string
		var got strings.Builder
		done := false
		for !done || !strings.Contains(got.String(), text) {
			ev := readFrame(t, c)
			b, _ := json.Marshal(ev)
			seen = append(seen, string(b))
			switch {
			case ev["event"] == "delta" && ev["thread_id"] == conv:
				got.WriteString(ev["text"].(string))
			case ev["event"] == "thread_updated" && ev["thread_id"] == conv && ev["status"] == "completed":
				done = true
			}
		}
		return seen
	}

	theirs := f.inject(open, "poet", map[string]string{"text": "a poem"})
	streamed(openStream, theirs, "Open verse zero")
	mine := f.inject(calc, "poet", map[string]string{"text": "a poem"})
	calcSeen := strings.Join(streamed(calcStream, mine, "Calc verse one"), "\n")
	streamed(openStream, mine, "Calc verse one")
	for _, leak := range []string{theirs, "Open", "zero"} {
		if strings.Contains(calcSeen, leak) {
			t.Errorf("the calc user receives %q:\n%s", leak, calcSeen)
		}
	}
	if !strings.Contains(calcSeen, `"event":"delta"`) {
		t.Errorf("the calc user receives no delta:\n%s", calcSeen)
	}
	if n := m.Count(); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}

	calls := func(token string) string {
		t.Helper()
		st, body, _ := f.do("GET", "/api/v1/usage/calls", token, nil)
		if st != 200 {
			t.Fatalf("usage calls: %d %v", st, body)
		}
		b, _ := json.Marshal(body)
		return string(b)
	}
	if got := calls(calc); !strings.Contains(got, mine) || strings.Contains(got, theirs) {
		t.Errorf("usage calls for the calc user: %s", got)
	}
	if got := calls(open); !strings.Contains(got, mine) || !strings.Contains(got, theirs) {
		t.Errorf("usage calls for the user without a profile: %s", got)
	}
}

const retainedYAML = `organism: {name: retained}
profiles:
  calc:
    listeners: [calculate]
  greeters:
    listeners: [greeter, shouter, response-handler]
    retention: prune_on_delivery
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: Greets
    peers: [shouter]
  - name: shouter
    payload_class: handlers.hello.GreetingResponse
    handler: handlers.hello.handle_shout
    description: Shouts
  - name: response-handler
    payload_class: handlers.hello.ShoutedResponse
    handler: handlers.hello.handle_response_print
    description: Prints
  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
`

// TestJournalAPIShowsProfilesAndPruned: the REST journal readers give each
// message the profile the journal recorded with it, and the entries
// retention pruned in their place, with why and when and no payload — to
// the users allowed to see them. A greeters user's conversation, pruned on
// delivery, still reads (as pruned entries) to them and to a user without
// a profile; a calc user sees none of it and their own messages under
// calc; the user without a profile's own messages carry profile "".
func TestJournalAPIShowsProfilesAndPruned(t *testing.T) {
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("retained.yaml", []byte(retainedYAML))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	})
	secrets := map[string]string{}
	profiled := func(name, profile string) string {
		t.Helper()
		secret := f.user(name, auth.Operator)
		if err := f.auth.SetProfile(context.Background(), name, profile); err != nil {
			t.Fatal(err)
		}
		secrets[name] = secret
		f.nextStep()
		return f.login(name, secret)
	}
	greet, calc := profiled("greetuser", "greeters"), profiled("calcuser", "calc")
	greetSecret, calcSecret := secrets["greetuser"], secrets["calcuser"]
	f.nextStep()
	open := f.loginAs("open", auth.Admin)

	c := f.dial("/api/v1/ws", open)
	readFrame(t, c)
	done := func(conv string) {
		t.Helper()
		for {
			if got := readFrame(t, c); got["event"] == "thread_updated" && got["thread_id"] == conv {
				return
			}
		}
	}
	hello := f.inject(greet, "greeter", map[string]string{"name": "Dan"})
	done(hello)
	sum := f.inject(calc, "calculate", map[string]string{"expression": "6 * 7"})
	done(sum)
	mine := f.inject(open, "calculate", map[string]string{"expression": "2 + 2"})
	done(mine)
	if err := f.org.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := f.org.Store().Sweep(context.Background(), organism.RetentionPolicy(f.org.CurrentConfig()))
	if err != nil || n == 0 {
		t.Fatalf("sweep: %d pruned, %v", n, err)
	}

	type message struct {
		Seq          int64
		Conversation string
		From         string
		Payload      string
		Profile      *string
		Pruned       *struct{ Reason, At string }
	}
	messages := func(token, path string) []message {
		t.Helper()
		st, body, _ := f.do("GET", path, token, nil)
		if st != 200 {
			t.Fatalf("%s: %d %v", path, st, body)
		}
		b, _ := json.Marshal(body["messages"])
		var out []message
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// checkHello: the greeters conversation, every entry pruned, each
	// with its profile.
	checkHello := func(who string, ms []message, least int) {
		t.Helper()
		pruned := 0
		for _, m := range ms {
			if m.Conversation != hello {
				continue
			}
			if m.Pruned == nil || m.Pruned.Reason != "prune_on_delivery" || m.Pruned.At == "" || m.Payload != "" ||
				m.Profile == nil || *m.Profile != "greeters" {
				b, _ := json.Marshal(m)
				t.Errorf("%s: an entry of the greeters conversation: %s", who, b)
			}
			pruned++
		}
		if pruned < least {
			t.Errorf("%s: %d pruned entries of the greeters conversation", who, pruned)
		}
	}
	for _, token := range []string{greet, open} {
		// the greeting, the greeter's answer, the shout
		checkHello("thread messages", messages(token, "/api/v1/threads/"+hello+"/messages?scope=conversation"), 3)
	}
	checkHello("open messages", messages(open, "/api/v1/messages?limit=200"), 3)
	checkHello("open thread filter", messages(open, "/api/v1/messages?thread="+hello), 1) // the greeting's thread
	checkHello("open after", messages(open, "/api/v1/messages?after=0&limit=200"), 3)

	profileOf := func(ms []message, conv string) (string, int) {
		seen, n := "", 0
		for _, m := range ms {
			if m.Conversation == conv {
				n++
				if m.Profile == nil || m.Pruned != nil || n > 1 && *m.Profile != seen {
					return "(bad)", n // every entry of the conversation under the one profile
				}
				seen = *m.Profile
			}
		}
		return seen, n
	}
	calcSees := messages(calc, "/api/v1/messages?limit=200")
	if p, n := profileOf(calcSees, sum); p != "calc" || n < 2 {
		t.Errorf("the calc user's own messages: profile %q, %d messages", p, n)
	}
	if _, n := profileOf(calcSees, hello); n != 0 {
		t.Errorf("the calc user sees %d entries of the greeters conversation", n)
	}
	if _, n := profileOf(calcSees, mine); n != 0 {
		t.Errorf("the calc user sees %d entries of a conversation without a profile", n)
	}
	openSees := messages(open, "/api/v1/messages?limit=200")
	if p, n := profileOf(openSees, mine); p != "" || n < 2 {
		t.Errorf("the open user's own messages: profile %q, %d messages", p, n)
	}
	if st, _, _ := f.do("GET", "/api/v1/threads/"+hello+"/messages", calc, nil); st != 404 {
		t.Errorf("the greeters conversation for the calc user: %d", st)
	}

	// Once the conversation's threads are gone (the TTL collected them),
	// the journal alone says whose they are: its pruned entries read the
	// same, to the same users.
	if err := f.org.Pump.Threads().End(hello); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{greet, open} {
		checkHello("thread messages, threads ended", messages(token, "/api/v1/threads/"+hello+"/messages?scope=conversation"), 3)
	}
	checkHello("greeters messages, threads ended", messages(greet, "/api/v1/messages?limit=200"), 3)
	if st, _, _ := f.do("GET", "/api/v1/threads/"+hello+"/messages", calc, nil); st != 404 {
		t.Errorf("the greeters conversation for the calc user, threads ended: %d", st)
	}

	// And after a restart, which restores no thread of it.
	f.restartOrganism()
	greet, calc, open = f.login("greetuser", greetSecret), f.login("calcuser", calcSecret), f.loginAs("open2", auth.Admin)
	for _, token := range []string{greet, open} {
		checkHello("thread messages, restarted", messages(token, "/api/v1/threads/"+hello+"/messages?scope=conversation"), 3)
	}
	checkHello("greeters messages, restarted", messages(greet, "/api/v1/messages?limit=200"), 3)
	if st, body, _ := f.do("GET", "/api/v1/threads/"+hello, greet, nil); st != 200 || body["conversation"] != hello {
		t.Errorf("the greeters conversation's thread, restarted: %d %v", st, body)
	}
	if st, _, _ := f.do("GET", "/api/v1/threads/"+hello+"/messages", calc, nil); st != 404 {
		t.Errorf("the greeters conversation for the calc user, restarted: %d", st)
	}
}

// TestProfileMasksBus: on the raw-XML /bus, a calc user's envelope for the
// greeter is answered word for word as one for a listener that does not
// exist (the same <huh>, of the same sender, about their own frame); a
// user without a profile reaches the greeter.
func TestProfileMasksBus(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)

	c := f.dial("/bus", calc)
	answer := func(to string) (wireEnvelope, string) {
		t.Helper()
		frame := strings.Replace(envelope("websocket:calcuser", stage.NewThreadID(), "Dan"), "<to>greeter</to>",
			"<to>"+to+"</to>", 1)
		sendRaw(t, c, frame)
		e, raw := readEnvelope(t, c)
		orig, err := base64.StdEncoding.DecodeString(e.Payload.Original)
		if err != nil || string(orig) != frame {
			t.Errorf("to %s: original-attempt %q (%v)", to, orig, err)
		}
		return e, raw
	}
	masked, rawMasked := answer("greeter")
	none, rawNone := answer("nobody")
	if masked.From != "core" || masked.Payload.XMLName.Local != "huh" || masked.From != none.From ||
		masked.To != none.To || masked.Payload.XMLName != none.Payload.XMLName || masked.Payload.Error != none.Payload.Error {
		t.Errorf("the masked greeter answers\n%s\na nonexistent listener\n%s", rawMasked, rawNone)
	}
	o := f.dial("/bus", open)
	sendRaw(t, o, envelope("websocket:open", stage.NewThreadID(), "Dan"))
	// The greeter ran: it answers, or (this organism has no shouter) its
	// caller is told the greeter's answer has no route.
	e, raw := readEnvelope(t, o)
	unrouted := e.From == "core" && e.Payload.XMLName.Local == "huh" &&
		strings.Contains(e.Payload.Error, "from greeter has no route")
	if e.From != "greeter" && !unrouted {
		t.Errorf("the user without a profile: %s", raw)
	}
}

// TestProfileMasksApprovals: an approval waiting on a conversation outside
// a user's profile (the researcher's call, for a user without a profile)
// does not exist for a calc user: not listed, and reading or deciding it
// is answered as for an approval that does not exist; the user without a
// profile lists it and decides it.
func TestProfileMasksApprovals(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "It ran.")
	dir := t.TempDir()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	if err := os.WriteFile(filepath.Join(dir, "CONSTITUTION.md"), []byte(governedConstitution), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(governedYAML, m.URL) + `  - name: calculate
    payload_class: tools.Calculate
    handler: tools.Calculate
    description: Evaluates arithmetic
profiles:
  calc:
    listeners: [calculate]
`
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)

	ws := f.dial("/ws", open)
	readUntil(t, ws, "connected")
	sendOver(t, ws, "researcher", "what day is it?")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)

	if st, body, _ := f.do("GET", "/api/v1/approvals", calc, nil); st != 200 || len(body["approvals"].([]any)) != 0 {
		t.Errorf("approvals for the calc user: %d %v", st, body)
	}
	for _, c := range []struct{ method string }{{"GET"}, {"POST"}} {
		body := map[string]string{"decision": "approve"}
		sm, bm, _ := f.do(c.method, "/api/v1/approvals/"+id, calc, body)
		sn, bn, _ := f.do(c.method, "/api/v1/approvals/nope", calc, body)
		if sm != 404 || sm != sn || !reflect.DeepEqual(bm, bn) {
			t.Errorf("%s the masked approval: %d %v; a nonexistent one: %d %v", c.method, sm, bm, sn, bn)
		}
	}
	if st, body, _ := f.do("GET", "/api/v1/approvals", open, nil); st != 200 || len(body["approvals"].([]any)) != 1 {
		t.Errorf("approvals for the user without a profile: %d %v", st, body)
	}
	if st, body, _ := f.do("POST", "/api/v1/approvals/"+id, open, map[string]string{"decision": "approve"}); st != 200 ||
		body["status"] != "approved" {
		t.Errorf("the user without a profile decides: %d %v", st, body)
	}
}

// TestProfileMasksGateways: a gateway shows to a user with a profile only
// through the imports the profile reaches — organism B's gateway imports
// nothing, so a calc user lists no gateway — while a user without a
// profile sees it with its exports.
func TestProfileMasksGateways(t *testing.T) {
	f := newFixtureWith(t, federatedB(t))
	secret := f.user("calcuser", auth.Viewer)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Viewer)
	if st, body, _ := f.do("GET", "/api/v1/gateways", calc, nil); st != 200 || len(body["gateways"].([]any)) != 0 {
		t.Errorf("gateways for the calc user: %d %v", st, body)
	}
	if st, body, _ := f.do("GET", "/api/v1/gateways", open, nil); st != 200 || len(body["gateways"].([]any)) != 1 {
		t.Errorf("gateways for the user without a profile: %d %v", st, body)
	}
}
