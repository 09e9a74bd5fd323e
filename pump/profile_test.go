package pump_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// profiled starts a pump with the given profiles and listeners.
func profiled(t *testing.T, defs []pump.ProfileDef, ls ...pump.Listener) *pump.Pump {
	t.Helper()
	p := newPump(t, pump.Options{}, ls...)
	if err := p.SetProfiles(defs); err != nil {
		t.Fatalf("SetProfiles: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return p
}

// refusal is what the sender of an undeliverable message learns: the
// ingress error and the event its outlet gets (minus times and ids).
type refusal struct {
	Err               string
	Kind              pump.EventKind
	From, To, Payload string
	Error             string
	Huh               any
}

// refusalOf injects raw under profile and returns what its sender learns.
func refusalOf(t *testing.T, p *pump.Pump, profile string, raw []byte) refusal {
	t.Helper()
	out := newRecorder()
	_, err := p.InjectWait(pump.WithProfile(waitCtx(t), profile), raw, out)
	if err == nil {
		t.Fatal("the message was accepted")
	}
	e := out.waitFor(t, "huh", kind(pump.EventHuh))
	return refusal{Err: err.Error(), Kind: e.Kind, From: e.From, To: e.To, Payload: e.PayloadName, Error: e.Error, Huh: e.Payload}
}

// TestProfileStructuralImpossibility: a message for a listener outside the
// sender's profile is refused exactly as one for a listener that does not
// exist (same error, same event, same <huh>), and nothing handles it; a
// listener inside the profile is reached.
func TestProfileStructuralImpossibility(t *testing.T) {
	pr := newProbe()
	defs := []pump.ProfileDef{{Name: "calc-only", Listeners: []string{"calculate"}}}
	masked := profiled(t, defs, sink[Ping](t, "calculate", pr), sink[Pong](t, "greeter", pr))
	absent := profiled(t, defs, sink[Ping](t, "calculate", pr))

	thread := stage.NewThreadID()
	raw := envelope(client, "greeter", thread, `<Pong xmlns=""><Text>hi</Text></Pong>`)
	got := refusalOf(t, masked, "calc-only", raw)
	want := refusalOf(t, absent, "calc-only", raw)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("masked listener refused as\n%+v\nnonexistent one as\n%+v", got, want)
	}
	if got.Error != failure.HuhPayload {
		t.Errorf("refusal %+v is not the canned no-route <huh>", got)
	}
	// Without <to>, by root tag alone: the same.
	raw = envelope(client, "", stage.NewThreadID(), `<Pong xmlns=""><Text>hi</Text></Pong>`)
	if got, want := refusalOf(t, masked, "calc-only", raw), refusalOf(t, absent, "calc-only", raw); !reflect.DeepEqual(got, want) {
		t.Errorf("by root tag: masked\n%+v\nnonexistent\n%+v", got, want)
	}
	if n := len(pr.all()); n != 0 {
		t.Fatalf("%d deliveries to a masked listener", n)
	}
	// Inside the profile: delivered, and the handler sees its profile.
	out := newRecorder()
	if _, err := masked.Send(pump.WithProfile(waitCtx(t), "calc-only"), client, "calculate", &Ping{Text: "6*7"}, out); err != nil {
		t.Fatal(err)
	}
	c := pr.next(t)
	if c.Listener != "calculate" || c.MD.Profile == nil || c.MD.Profile.Name() != "calc-only" {
		t.Fatalf("delivered %+v", c)
	}
	if c.MD.Profile.Reaches("greeter") || !c.MD.Profile.Reaches("CALCULATE") {
		t.Error("the handler's profile reaches the wrong listeners")
	}
	// Without a profile the same pump reaches everything.
	mustSend(t, masked, client, "greeter", &Pong{Text: "hi"}, newRecorder())
	if c := pr.next(t); c.Listener != "greeter" || c.MD.Profile != nil {
		t.Errorf("unprofiled: %+v", c)
	}
}

// TestProfileUnknownFailsClosed: a profile no definition names reaches
// nothing — also on a pump that defines no profiles at all.
func TestProfileUnknownFailsClosed(t *testing.T) {
	pr := newProbe()
	for _, defs := range [][]pump.ProfileDef{nil, {{Name: "some", Listeners: []string{"*"}}}} {
		p := profiled(t, defs, sink[Ping](t, "calculate", pr))
		raw := envelope(client, "calculate", stage.NewThreadID(), `<Ping xmlns=""><Text>x</Text></Ping>`)
		if r := refusalOf(t, p, "nonesuch", raw); r.Error != failure.HuhPayload {
			t.Errorf("refusal %+v", r)
		}
		if p.ProfileReaches("nonesuch", "calculate") || p.ProfileDefined("nonesuch") {
			t.Error("an undefined profile reaches calculate")
		}
	}
	if n := len(pr.all()); n != 0 {
		t.Fatalf("%d deliveries", n)
	}
}

// TestProfileChildNeverWider: an agent whose own profile is wider than the
// thread's spawns children under the intersection — it cannot reach what
// its conversation's profile leaves out, even a peer its own profile names;
// a peer outside is refused as one that does not exist, and is offered to
// it as one that does not exist.
func TestProfileChildNeverWider(t *testing.T) {
	pr := newProbe()
	refused := make(chan *xmlpipe.DeliveryError, 4)
	seen := make(chan xmlpipe.Metadata, 4)
	planner := withErrorHandler(agent(listenerOf(t, "planner", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		seen <- md
		if in.Text == "calculate" {
			return xmlpipe.Send(in.Text, &ChainB{Text: "go"}), nil
		}
		return xmlpipe.Send(in.Text, &ChainC{Text: "go"}), nil
	}), "calculate", "greeter", "ghost"), func(_ context.Context, de *xmlpipe.DeliveryError, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		refused <- de
		return nil, nil
	})
	planner.Profile = "wide"
	p := profiled(t, []pump.ProfileDef{
		{Name: "narrow", Listeners: []string{"planner", "calculate"}},
		{Name: "wide", Listeners: []string{"*"}},
	}, planner, sink[ChainB](t, "calculate", pr), sink[ChainC](t, "greeter", pr))

	ctx := pump.WithProfile(waitCtx(t), "narrow")
	out := newRecorder()
	if _, err := p.Send(ctx, client, "planner", &ChainA{Text: "calculate"}, out); err != nil {
		t.Fatal(err)
	}
	md := recv(t, seen)
	if md.Profile == nil || md.Profile.Name() != "narrow&wide" {
		t.Fatalf("the agent's sends travel under %v, want narrow&wide", md.Profile)
	}
	c := pr.next(t)
	if c.Listener != "calculate" || c.MD.Profile == nil || c.MD.Profile.Name() != "narrow&wide" {
		t.Fatalf("child: %+v", c)
	}
	// The masked peer is offered as the nonexistent one is: a name alone.
	for _, peer := range md.Peers {
		switch peer.Name {
		case "calculate":
			if peer.Payload == nil {
				t.Error("calculate offered without its contract")
			}
		case "greeter", "ghost":
			if peer.Payload != nil || peer.Description != "" {
				t.Errorf("peer %s offered: %+v", peer.Name, peer)
			}
		}
	}
	if md.UsageInstructions == "" || contains(md.UsageInstructions, "<ChainB>") == 0 || contains(md.UsageInstructions, "<ChainC>") != 0 {
		t.Errorf("usage instructions describe more than calculate:\n%s", md.UsageInstructions)
	}

	// greeter (in its peers, in its own profile, not in the thread's) and
	// ghost (in its peers, nowhere) are refused alike.
	var errs []*xmlpipe.DeliveryError
	for _, to := range []string{"greeter", "ghost"} {
		out := newRecorder()
		if _, err := p.Send(ctx, client, "planner", &ChainA{Text: to}, out); err != nil {
			t.Fatal(err)
		}
		recv(t, seen)
		errs = append(errs, recv(t, refused))
	}
	if errs[0].Huh == nil || errs[1].Huh == nil || errs[0].Huh.Error != errs[1].Huh.Error {
		t.Errorf("masked peer refused as %+v, nonexistent as %+v", errs[0], errs[1])
	}
	if n := len(pr.all()); n != 1 {
		t.Errorf("%d deliveries, want only calculate's", n)
	}
}

// contains counts the occurrences of sub in s.
func contains(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

// TestProfileNoRuntimeDowngrade: a conversation routes within the profile
// definitions it began with; a change of the definitions (a reload) applies
// to conversations begun after it.
func TestProfileNoRuntimeDowngrade(t *testing.T) {
	pr := newProbe()
	g := newGate()
	started := make(chan struct{}, 1)
	relay := listenerOf(t, "relay", func(ctx context.Context, in *ChainA, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "wait" {
			started <- struct{}{}
			if !g.wait(ctx) {
				return nil, ctx.Err()
			}
		}
		return xmlpipe.Send("target", &ChainB{Text: in.Text}), nil
	})
	p := profiled(t, []pump.ProfileDef{{Name: "p", Listeners: []string{"relay", "target"}}}, relay, sink[ChainB](t, "target", pr))
	ctx := pump.WithProfile(waitCtx(t), "p")
	running := newRecorder()
	if _, err := p.Send(ctx, client, "relay", &ChainA{Text: "wait"}, running); err != nil {
		t.Fatal(err)
	}
	recv(t, started)
	// The reload: p no longer reaches target.
	if err := p.SetProfiles([]pump.ProfileDef{{Name: "p", Listeners: []string{"relay"}}}); err != nil {
		t.Fatal(err)
	}
	g.open()
	if c := pr.next(t); c.Listener != "target" || c.Payload.(*ChainB).Text != "wait" {
		t.Fatalf("running conversation: %+v", c)
	}
	running.waitFor(t, "completion", kind(pump.EventComplete))

	// A conversation begun after the reload: target is out of reach.
	later := newRecorder()
	if _, err := p.Send(ctx, client, "relay", &ChainA{Text: "now"}, later); err != nil {
		t.Fatal(err)
	}
	later.waitFor(t, "completion", kind(pump.EventComplete))
	if n := len(pr.all()); n != 1 {
		t.Fatalf("%d deliveries to target, want 1 (the running conversation's)", n)
	}
	if p.ProfileReaches("p", "target") || !p.ProfileReaches("p", "relay") {
		t.Error("ProfileReaches does not follow the new definitions")
	}
}

// TestProfilePrincipal: an authenticated session's profile is its
// conversations' (narrowed by WithProfile's when both are given).
func TestProfilePrincipal(t *testing.T) {
	pr := newProbe()
	p := profiled(t, []pump.ProfileDef{
		{Name: "calc", Listeners: []string{"calculate"}},
		{Name: "all", Listeners: []string{"*"}},
	}, sink[Ping](t, "calculate", pr), sink[Pong](t, "greeter", pr))
	who := pump.Principal{From: "websocket:alice", User: "alice", Profile: "calc", FreshThread: true}
	out := newRecorder()
	_, err := p.InjectAs(pump.WithProfile(waitCtx(t), "all"), envelope(who.From, "greeter", stage.NewThreadID(),
		`<Pong xmlns=""><Text>hi</Text></Pong>`), out, who)
	if !errors.Is(err, failure.ErrNoRoute) {
		t.Fatalf("greeter for a calc-only user: %v", err)
	}
	if _, err := p.InjectAs(waitCtx(t), envelope(who.From, "calculate", stage.NewThreadID(),
		`<Ping xmlns=""><Text>6*7</Text></Ping>`), out, who); err != nil {
		t.Fatal(err)
	}
	if c := pr.next(t); c.Listener != "calculate" || c.MD.Profile.Name() != "calc" {
		t.Fatalf("%+v", c)
	}
}

// TestProfileAnswersReachCaller: an answer travels back to its caller
// under the caller's thread's profile, even when the answering thread's is
// narrower than the caller's own reach; and a listener reaches itself.
func TestProfileAnswersReachCaller(t *testing.T) {
	answers := make(chan string, 2)
	asker := agent(listenerOf(t, "asker", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == "echo" {
			answers <- in.Text + " @ " + md.Profile.Name()
			return nil, nil
		}
		return xmlpipe.Send("echo", &Bounce{Text: in.Text}), nil
	}), "echo")
	asker.Profile = "tools" // its children reach echo alone, not asker
	echo := listenerOf(t, "echo", func(_ context.Context, in *Bounce, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.Respond(&Ping{Text: in.Text}), nil
	})
	p := profiled(t, []pump.ProfileDef{
		{Name: "user", Listeners: []string{"asker", "echo"}},
		{Name: "tools", Listeners: []string{"echo"}},
	}, asker, echo)
	if _, err := p.Send(pump.WithProfile(waitCtx(t), "user"), client, "asker", &Ping{Text: "q"}, newRecorder()); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, answers); got != "q @ tools&user" {
		t.Errorf("answer %q", got)
	}
}

// TestProfileDefs: malformed definitions are refused.
func TestProfileDefs(t *testing.T) {
	p := newPump(t, pump.Options{})
	for _, tc := range []struct {
		name string
		defs []pump.ProfileDef
	}{
		{"upper case", []pump.ProfileDef{{Name: "Reader"}}},
		{"ampersand", []pump.ProfileDef{{Name: "a&b"}}},
		{"space", []pump.ProfileDef{{Name: "a b"}}},
		{"empty", []pump.ProfileDef{{Name: ""}}},
		{"twice", []pump.ProfileDef{{Name: "a"}, {Name: "a"}}},
		{"bad glob", []pump.ProfileDef{{Name: "a", Listeners: []string{"[x"}}}},
		{"network without port", []pump.ProfileDef{{Name: "a", Network: []string{"example.com"}}}},
		{"network bad port", []pump.ProfileDef{{Name: "a", Network: []string{"example.com:http"}}}},
		{"network mid wildcard", []pump.ProfileDef{{Name: "a", Network: []string{"a.*.com:443"}}}},
	} {
		if err := p.SetProfiles(tc.defs); !errors.Is(err, pump.ErrBadProfile) {
			t.Errorf("%s: %v, want ErrBadProfile", tc.name, err)
		}
	}
}

// TestProfileNetwork: MayDial follows the network lists of every term.
func TestProfileNetwork(t *testing.T) {
	p := newPump(t, pump.Options{})
	if err := p.SetProfiles([]pump.ProfileDef{
		{Name: "web", Network: []string{"*.example.com:443", "api.other.org:*", "127.0.0.1:8080", "[::1]:9000"}},
		{Name: "offline", Network: []string{}},
		{Name: "any"},
		{Name: "local", Network: []string{"127.0.0.1:*"}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		profile, addr string
		want          bool
	}{
		{"web", "www.example.com:443", true},
		{"web", "WWW.Example.COM.:443", true},
		{"web", "example.com:443", false},
		{"web", "www.example.com:80", false},
		{"web", "api.other.org:8443", true},
		{"web", "127.0.0.1:8080", true},
		{"web", "[::1]:9000", true},
		{"web", "127.0.0.1:8081", false},
		{"web", "not an address", false},
		{"offline", "www.example.com:443", false},
		{"any", "anything.anywhere:1", true},
		{"any&web", "www.example.com:443", true},
		{"any&offline", "www.example.com:443", false},
		{"local&web", "127.0.0.1:8080", true},
		{"local&web", "www.example.com:443", false},
		{"undefined", "127.0.0.1:8080", false},
	} {
		pr := p.Profile(tc.profile)
		if got := pr.MayDial(tc.addr); got != tc.want {
			t.Errorf("%s may dial %s: %v, want %v", tc.profile, tc.addr, got, tc.want)
		}
		err := xmlpipe.CheckDial(xmlpipe.WithProfile(context.Background(), pr), tc.addr)
		if (err == nil) != tc.want || err != nil && !errors.Is(err, xmlpipe.ErrNetworkDenied) {
			t.Errorf("CheckDial %s %s: %v", tc.profile, tc.addr, err)
		}
	}
	if p.Profile("") != nil {
		t.Error("no profile is a profile")
	}
	if err := xmlpipe.CheckDial(context.Background(), "x:1"); err != nil {
		t.Error(err)
	}
}

// TestProfileHandlerDials: a handler's context carries its thread's
// profile, so the network tools' dials (xmlpipe.CheckDial) are held to
// its network: allow-list; a thread without a profile dials anything.
func TestProfileHandlerDials(t *testing.T) {
	dials := make(chan error, 2)
	p := profiled(t, []pump.ProfileDef{
		{Name: "local", Listeners: []string{"fetcher"}, Network: []string{"127.0.0.1:8080"}},
	}, listenerOf(t, "fetcher", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		dials <- errors.Join(xmlpipe.CheckDial(ctx, "127.0.0.1:8080"), xmlpipe.CheckDial(ctx, "example.com:443"))
		return nil, nil
	}))
	ping := `<Ping xmlns=""><Text>x</Text></Ping>`
	if _, err := p.InjectWait(pump.WithProfile(waitCtx(t), "local"), envelope("ext", "fetcher", stage.NewThreadID(), ping), nil); err != nil {
		t.Fatal(err)
	}
	if err := <-dials; !errors.Is(err, xmlpipe.ErrNetworkDenied) || !strings.Contains(err.Error(), "example.com:443") ||
		strings.Contains(err.Error(), "8080") {
		t.Errorf("dials under local: %v, want example.com:443 alone refused", err)
	}
	if _, err := p.InjectWait(waitCtx(t), envelope("ext", "fetcher", stage.NewThreadID(), ping), nil); err != nil {
		t.Fatal(err)
	}
	if err := <-dials; err != nil {
		t.Errorf("dials without a profile: %v", err)
	}
}
