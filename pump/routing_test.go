package pump_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestRouting: with <to> the listener of that name (case-insensitive) whose tag
// matches; without <to> every listener of the root tag (reference Q4 fixed).
func TestRouting(t *testing.T) {
	tests := []struct {
		name, to, payload string
		want              string // listener that must receive it
	}{
		{"to by exact name", "echo", `<Ping xmlns=""><Text>1</Text></Ping>`, "echo"},
		{"to is case-insensitive", "ECHO", `<Ping xmlns=""><Text>2</Text></Ping>`, "echo"},
		{"to with mixed case", "PoNg-Box", `<Pong xmlns=""><Text>3</Text></Pong>`, "pong-box"},
		{"no to: by root tag", "", `<Ping xmlns=""><Text>4</Text></Ping>`, "echo"},
		{"no to: other root tag", "", `<Pong xmlns=""><Text>5</Text></Pong>`, "pong-box"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr := newProbe()
			p := startPump(t, pump.Options{}, sink[Ping](t, "echo", pr), sink[Pong](t, "pong-box", pr))
			out := newRecorder()
			thread := stage.NewThreadID()
			if _, err := injectErr(t, p, envelope(client, tc.to, thread, tc.payload), out); err != nil {
				t.Fatalf("InjectWait: %v", err)
			}
			c := pr.next(t)
			if c.Listener != tc.want || c.MD.From != client || c.MD.ThreadID != thread {
				t.Errorf("delivered to %s (from %q, thread %s), want %s from %q on %s", c.Listener, c.MD.From,
					c.MD.ThreadID, tc.want, client, thread)
			}
			out.waitFor(t, "completion", kind(pump.EventComplete))
			if n := len(pr.all()); n != 1 {
				t.Errorf("%d deliveries, want 1", n)
			}
		})
	}
}

// TestRoutingTagNameMismatch: <to> names a listener whose payload tag is not the
// root → <huh> to the sender, nobody handles it.
func TestRoutingTagNameMismatch(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Ping](t, "echo", pr), sink[Pong](t, "pong-box", pr))
	out := newRecorder()
	raw := envelope(client, "echo", stage.NewThreadID(), `<Pong xmlns=""><Text>x</Text></Pong>`)
	_, err := injectErr(t, p, raw, out)
	if !errors.Is(err, failure.ErrNoRoute) {
		t.Fatalf("InjectWait error %v, want ErrNoRoute", err)
	}
	e := out.waitFor(t, "huh", kind(pump.EventHuh))
	if e.Error != failure.HuhPayload {
		t.Errorf("huh %q, want %q", e.Error, failure.HuhPayload)
	}
	if n := len(pr.all()); n != 0 {
		t.Errorf("%d deliveries, want none", n)
	}
}

// TestRegistrationRules covers the registration rules of DESIGN §3 (reference
// Q5 fixed: collisions are errors, broadcast groups are explicit).
func TestRegistrationRules(t *testing.T) {
	nop := func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil }
	ping := func(name string) pump.Listener { return listenerOf(t, name, nop) }
	twin := func(name string) pump.Listener {
		return listenerOf(t, name, func(context.Context, *PingTwin, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, nil
		})
	}
	bcast := func(l pump.Listener) pump.Listener { l.Broadcast = true; return l }
	pong := listenerOf(t, "pong", func(context.Context, *Pong, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })
	tests := []struct {
		name   string
		before []pump.Listener
		add    pump.Listener
		system bool
		want   error // nil: accepted
	}{
		{"distinct names and tags", []pump.Listener{ping("a")}, pong, false, nil},
		{"duplicate name", []pump.Listener{ping("a")}, renamed(pong, "a"), false, pump.ErrDuplicateName},
		{"duplicate name differing in case", []pump.Listener{ping("echo")}, renamed(pong, "Echo"), false, pump.ErrDuplicateName},
		{"duplicate tag without broadcast", []pump.Listener{ping("a")}, ping("b"), false, pump.ErrTagCollision},
		{"duplicate tag, only the newcomer broadcast", []pump.Listener{ping("a")}, bcast(ping("b")), false, pump.ErrTagCollision},
		{"duplicate tag, only the first broadcast", []pump.Listener{bcast(ping("a"))}, ping("b"), false, pump.ErrTagCollision},
		{"broadcast group of one type", []pump.Listener{bcast(ping("a")), bcast(ping("b"))}, bcast(ping("c")), false, nil},
		{"broadcast group mixing Go types", []pump.Listener{bcast(ping("a"))}, bcast(twin("b")), false, pump.ErrTagCollision},
		{"same tag, other Go type, no broadcast", []pump.Listener{ping("a")}, twin("b"), false, pump.ErrTagCollision},
		{"agent sharing a non-agent's tag", []pump.Listener{ping("a")}, agent(ping("b")), false, pump.ErrTagCollision},
		{"non-agent sharing an agent's tag", []pump.Listener{agent(ping("a"))}, ping("b"), false, pump.ErrTagCollision},
		{"broadcast agents sharing a tag", []pump.Listener{bcast(agent(ping("a")))}, bcast(agent(ping("b"))), false, pump.ErrTagCollision},
		{"reserved name system", nil, ping("system"), false, pump.ErrReservedName},
		{"reserved name core, any case", nil, ping("Core"), false, pump.ErrReservedName},
		{"system. prefix reserved", nil, ping("System.Todo"), false, pump.ErrReservedName},
		{"system. prefix allowed for the organism", nil, ping("system.todo"), true, nil},
		{"empty name", nil, ping(""), false, pump.ErrBadListener},
		{"name with surrounding spaces", nil, ping(" a"), false, pump.ErrBadListener},
		{"no payload type", nil, pump.Listener{Name: "a", Handler: ping("a").Handler}, false, pump.ErrBadListener},
		{"no handler", nil, pump.Listener{Name: "a", Payload: ping("a").Payload}, false, pump.ErrBadListener},
		{"typed handler of another payload type", nil, pump.Listener{Name: "a", Payload: ping("a").Payload,
			Handler: pong.Handler}, false, pump.ErrBadListener},
		{"untyped handler", nil, pump.Listener{Name: "a", Payload: ping("a").Payload,
			Handler: xmlpipe.HandlerFunc(func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })},
			false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPump(t, pump.Options{}, tc.before...)
			var err error
			if tc.system {
				err = p.RegisterSystem(tc.add)
			} else {
				err = p.Register(tc.add)
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Register(%q) = %v, want %v", tc.add.Name, err, tc.want)
			}
			want := len(tc.before)
			if tc.want == nil {
				want++
			}
			if got := len(p.Listeners()); got != want {
				t.Errorf("%d listeners registered, want %d", got, want)
			}
		})
	}
	t.Run("after start", func(t *testing.T) {
		p := startPump(t, pump.Options{}, ping("a"))
		if err := p.Register(pong); !errors.Is(err, pump.ErrStarted) {
			t.Errorf("Register after Start = %v, want ErrStarted", err)
		}
	})
}

// renamed returns a copy of l with another name.
func renamed(l pump.Listener, name string) pump.Listener { l.Name = name; return l }

// TestRespondPrunesChain: client → a → b → c; c responds → b on b's own thread;
// b responds → a on a's thread; a responds → the client's outlet gets an
// EventReply. Every respond ends the responder's thread.
func TestRespondPrunesChain(t *testing.T) {
	var p *pump.Pump
	pr := newProbe()
	known := func(id string) bool { return p.Threads().Known(id) }
	var mu sync.Mutex
	seen := map[string]string{} // role → thread
	note := func(role, thread string) { mu.Lock(); seen[role] = thread; mu.Unlock() }
	get := func(role string) string { mu.Lock(); defer mu.Unlock(); return seen[role] }
	var paths sync.Map
	var cAliveAtB atomic.Bool
	a := listenerOf(t, "a", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("a", in, md)
		if md.From == client {
			note("a", md.ThreadID)
			paths.Store("a", p.Threads().DebugDump()[md.ThreadID])
			return xmlpipe.Send("b", &ChainB{Text: "to b"}), nil
		}
		note("a-back", md.ThreadID)
		return xmlpipe.Respond(&ChainA{Text: "done: " + in.Text}), nil
	})
	b := listenerOf(t, "b", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("b", in, md)
		if md.From == "a" {
			note("b", md.ThreadID)
			paths.Store("b", p.Threads().DebugDump()[md.ThreadID])
			return xmlpipe.Send("c", &ChainC{Text: "to c"}), nil
		}
		note("b-back", md.ThreadID)
		cAliveAtB.Store(known(get("c")))
		return xmlpipe.Respond(&ChainA{Text: "from b"}), nil
	})
	c := listenerOf(t, "c", func(_ context.Context, in *ChainC, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("c", in, md)
		note("c", md.ThreadID)
		paths.Store("c", p.Threads().DebugDump()[md.ThreadID])
		return xmlpipe.Respond(&ChainB{Text: "from c"}), nil
	})
	p = startPump(t, pump.Options{Organism: "org"}, a, b, c)
	out := newRecorder()
	conv := mustSend(t, p, client, "a", &ChainA{Text: "start"}, out)
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	out.waitFor(t, "completion", kind(pump.EventComplete))

	got := []string{}
	for _, c := range pr.all() {
		got = append(got, c.Listener+"<-"+c.MD.From)
	}
	if diff := cmp.Diff([]string{"a<-client", "b<-a", "c<-b", "b<-c", "a<-b"}, got); diff != "" {
		t.Errorf("hops (-want +got):\n%s", diff)
	}
	if get("a") != conv || get("a-back") != conv {
		t.Errorf("a ran on %s and %s, want the conversation thread %s both times", get("a"), get("a-back"), conv)
	}
	if get("b-back") != get("b") {
		t.Errorf("c's response reached b on %s, want b's own thread %s", get("b-back"), get("b"))
	}
	if ids := []string{get("a"), get("b"), get("c")}; ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Errorf("hops share a thread: %v", ids)
	}
	if cAliveAtB.Load() {
		t.Error("c's thread was still known when its response reached b")
	}
	wantPaths := map[string][]string{
		"a": {"org", client, "a"},
		"b": {"org", client, "a", "b"},
		"c": {"org", client, "a", "b", "c"},
	}
	for role, want := range wantPaths {
		got, _ := paths.Load(role)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("path of %s's thread (-want +got):\n%s", role, diff)
		}
	}
	if reply.From != "a" || reply.To != client || reply.Thread != conv || reply.Conversation != conv {
		t.Errorf("reply from=%s to=%s thread=%s conv=%s, want a → %s on %s", reply.From, reply.To, reply.Thread,
			reply.Conversation, client, conv)
	}
	if r, ok := reply.Payload.(*ChainA); !ok || r.Text != "done: from b" {
		t.Errorf("reply payload %#v", reply.Payload)
	}
	for _, role := range []string{"a", "b", "c"} {
		if known(get(role)) {
			t.Errorf("%s's thread %s still known after the chain responded", role, get(role))
		}
	}
}

// TestRespondEndsSubThreads: when a listener responds, threads spawned below
// its own (still running elsewhere) end with it; their later output is a dead
// letter, never delivered.
func TestRespondEndsSubThreads(t *testing.T) {
	var p *pump.Pump
	slowIn, slowGo := newGate(), newGate()
	var slowThread atomic.Value
	pr := newProbe()
	hub := listenerOf(t, "hub", func(_ context.Context, in *Fan, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("hub", in, md)
		if md.From == client {
			return xmlpipe.Raw([]byte(`Two jobs: <Slow><Text>s</Text></Slow> and <Bounce><Text>b</Text></Bounce>`)), nil
		}
		return xmlpipe.Respond(&Fan{Step: "answered by " + md.From}), nil
	})
	slow := listenerOf(t, "slow", func(ctx context.Context, in *Slow, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		slowThread.Store(md.ThreadID)
		slowIn.open()
		slowGo.wait(t.Context())
		return xmlpipe.Send("hub", &Fan{Step: "too late"}), nil
	})
	bouncer := listenerOf(t, "bouncer", func(_ context.Context, in *Bounce, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		slowIn.wait(t.Context()) // slow's sub-thread is live before hub responds
		return xmlpipe.Respond(&Fan{Step: "bounced"}), nil
	})
	p = startPump(t, pump.Options{}, hub, slow, bouncer)
	events := newRecorder()
	p.Subscribe(events)
	out := newRecorder()
	conv := mustSend(t, p, client, "hub", &Fan{Step: "go"}, out)
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	if r, ok := reply.Payload.(*Fan); !ok || r.Step != "answered by bouncer" {
		t.Errorf("reply %#v", reply.Payload)
	}
	st := slowThread.Load().(string)
	if p.Threads().Known(st) || p.Threads().Known(conv) {
		t.Errorf("after hub responded: slow's sub-thread known=%v, conversation known=%v; want both ended",
			p.Threads().Known(st), p.Threads().Known(conv))
	}
	slowGo.open()
	dl := events.waitFor(t, "dead letter of slow's late output", kind(pump.EventDeadLetter))
	if dl.From != "slow" || dl.Thread != st {
		t.Errorf("dead letter from %s on %s, want slow on %s", dl.From, dl.Thread, st)
	}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	if n := len(pr.all()); n != 2 {
		t.Errorf("hub handled %d messages, want 2 (slow's late output must not arrive)", n)
	}
}

// TestConversationsNeverShareThreads: every conversation and every hop gets its
// own UUID, even for identical chains, concurrent or repeated (reference Q9).
func TestConversationsNeverShareThreads(t *testing.T) {
	var p *pump.Pump
	pr := newProbe()
	first := listenerOf(t, "first", func(_ context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("first", in, md)
		return xmlpipe.Send("second", &Pong{Text: in.Text}), nil
	})
	second := listenerOf(t, "second", func(_ context.Context, in *Pong, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("second", in, md)
		if anc := p.Threads().Ancestors(md.ThreadID); len(anc) != 2 {
			t.Errorf("second's thread has ancestry %v, want [own, first's]", anc)
		}
		return nil, nil
	})
	p = startPump(t, pump.Options{}, first, second)
	const n = 4
	outs := make([]*recorder, n)
	convs := map[string]bool{}
	for i := range outs {
		outs[i] = newRecorder()
		convs[mustSend(t, p, client, "first", &Ping{Text: "same"}, outs[i])] = true
	}
	for _, o := range outs {
		o.waitFor(t, "completion", kind(pump.EventComplete))
	}
	if len(convs) != n {
		t.Fatalf("%d conversation ids for %d conversations", len(convs), n)
	}
	threads := map[string]string{}
	for _, c := range pr.all() {
		if !stage.IsThreadID(c.MD.ThreadID) {
			t.Errorf("%s got thread %q, not a lower-case UUID v4", c.Listener, c.MD.ThreadID)
		}
		if prev, dup := threads[c.MD.ThreadID]; dup {
			t.Errorf("thread %s used by %s and %s", c.MD.ThreadID, prev, c.Listener)
		}
		threads[c.MD.ThreadID] = c.Listener
	}
	if len(threads) != 2*n {
		t.Errorf("%d distinct threads, want %d", len(threads), 2*n)
	}
}

// TestDottedNames: listener, sender and organism names containing dots route
// and prune correctly; paths are segments, never split on "." (reference Q10).
func TestDottedNames(t *testing.T) {
	var p *pump.Pump
	var mu sync.Mutex
	var hops []string
	var mulPath []string
	add := listenerOf(t, "calc.add", func(_ context.Context, in *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		mu.Lock()
		hops = append(hops, "calc.add<-"+md.From)
		mu.Unlock()
		if md.From == "user.one" {
			return xmlpipe.Send("math.mul.v2", &ChainB{Text: in.Text}), nil
		}
		return xmlpipe.Respond(&ChainA{Text: "sum " + in.Text}), nil
	})
	mul := listenerOf(t, "math.mul.v2", func(_ context.Context, in *ChainB, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		mu.Lock()
		hops = append(hops, "math.mul.v2<-"+md.From)
		mulPath = p.Threads().DebugDump()[md.ThreadID]
		mu.Unlock()
		return xmlpipe.Respond(&ChainA{Text: "product"}), nil
	})
	p = startPump(t, pump.Options{Organism: "org.with.dots"}, add, mul)
	out := newRecorder()
	conv := mustSend(t, p, "user.one", "calc.add", &ChainA{Text: "1.5"}, out)
	reply := out.waitFor(t, "reply", kind(pump.EventReply))
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"calc.add<-user.one", "math.mul.v2<-calc.add", "calc.add<-math.mul.v2"}, hops); diff != "" {
		t.Errorf("hops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"org.with.dots", "user.one", "calc.add", "math.mul.v2"}, mulPath); diff != "" {
		t.Errorf("thread path (-want +got):\n%s", diff)
	}
	if reply.To != "user.one" || reply.From != "calc.add" || reply.Thread != conv {
		t.Errorf("reply %s → %s on %s, want calc.add → user.one on %s", reply.From, reply.To, reply.Thread, conv)
	}
	if r, ok := reply.Payload.(*ChainA); !ok || r.Text != "sum product" {
		t.Errorf("reply payload %#v", reply.Payload)
	}
}

// TestBroadcastIsConcurrent: a root tag shared by a broadcast group reaches
// every member, concurrently (reference Q5: the members wait on a barrier
// that only opens when all of them have entered), each on its own thread.
func TestBroadcastIsConcurrent(t *testing.T) {
	members := []string{"news.a", "news.b", "news.c"}
	tests := []struct {
		name string
		send func(t *testing.T, p *pump.Pump, out *recorder)
	}{
		{"external message without to", func(t *testing.T, p *pump.Pump, out *recorder) {
			raw := envelope(client, "", stage.NewThreadID(), `<News xmlns=""><Headline>h</Headline></News>`)
			if _, err := injectErr(t, p, raw, out); err != nil {
				t.Fatal(err)
			}
		}},
		{"raw handler output", func(t *testing.T, p *pump.Pump, out *recorder) {
			mustSend(t, p, client, "editor", &Ping{Text: "publish"}, out)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var entered atomic.Int32
			all := newGate()
			pr := newProbe()
			var ls []pump.Listener
			for _, name := range members {
				l := listenerOf(t, name, func(_ context.Context, in *News, md xmlpipe.Metadata) (xmlpipe.Response, error) {
					if entered.Add(1) == int32(len(members)) {
						all.open()
					}
					if !all.wait(t.Context()) {
						return nil, nil
					}
					pr.record(name, in, md)
					return nil, nil
				})
				l.Broadcast = true
				ls = append(ls, l)
			}
			ls = append(ls, listenerOf(t, "editor", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return xmlpipe.Raw([]byte(`<News><Headline>h</Headline></News>`)), nil
			}))
			p := startPump(t, pump.Options{}, ls...)
			out := newRecorder()
			tc.send(t, p, out)
			out.waitFor(t, "completion", kind(pump.EventComplete))
			got := map[string]bool{}
			threads := map[string]bool{}
			for _, c := range pr.all() {
				got[c.Listener] = true
				threads[c.MD.ThreadID] = true
			}
			if len(got) != len(members) || len(threads) != len(members) {
				t.Errorf("members reached %v on %d threads, want all %d on their own threads", got, len(threads), len(members))
			}
		})
	}
	t.Run("routes", func(t *testing.T) {
		var ls []pump.Listener
		for _, name := range members {
			l := sink[News](t, name, newProbe())
			l.Broadcast = true
			ls = append(ls, l)
		}
		p := newPump(t, pump.Options{}, ls...)
		want := []pump.Route{{Tag: "News", Listeners: members, Broadcast: true}}
		if diff := cmp.Diff(want, p.Routes()); diff != "" {
			t.Errorf("routes (-want +got):\n%s", diff)
		}
	})
	t.Run("to selects one member", func(t *testing.T) {
		pr := newProbe()
		var ls []pump.Listener
		for _, name := range members {
			l := sink[News](t, name, pr)
			l.Broadcast = true
			ls = append(ls, l)
		}
		p := startPump(t, pump.Options{}, ls...)
		out := newRecorder()
		mustSend(t, p, client, "NEWS.B", &News{Headline: "only b"}, out)
		out.waitFor(t, "completion", kind(pump.EventComplete))
		if calls := pr.all(); len(calls) != 1 || calls[0].Listener != "news.b" {
			t.Errorf("calls %v, want only news.b", calls)
		}
	})
}

// TestSiblingRequestsEachGetTheirReply: a listener whose one output carries
// two requests to the same listener (Raw with two root elements) gets both
// replies. Each forward has its own thread (a shared one would be ended by
// the first reply), and the listener returning nil after the first reply
// does not end the sub-thread the second is travelling on: the end waits
// until nothing of the conversation is in flight.
func TestSiblingRequestsEachGetTheirReply(t *testing.T) {
	pr := newProbe()
	threads := make(chan string, 2)
	fan := listenerOf(t, "fan", func(_ context.Context, in *Fan, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if md.From == "bouncer" {
			pr.record("fan", in, md)
			return nil, nil
		}
		return xmlpipe.Raw([]byte(`<Bounce><Text>one</Text></Bounce><Bounce><Text>two</Text></Bounce>`)), nil
	})
	bouncer := listenerOf(t, "bouncer", func(_ context.Context, in *Bounce, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads <- md.ThreadID
		return xmlpipe.Respond(&Fan{Step: in.Text}), nil
	})
	p := startPump(t, pump.Options{}, fan, bouncer)
	all := newRecorder()
	p.Subscribe(all)
	out := newRecorder()
	mustSend(t, p, client, "fan", &Fan{Step: "go"}, out)
	recv := func() string {
		select {
		case th := <-threads:
			return th
		case <-time.After(waitTimeout):
			t.Fatalf("bouncer not called twice:\n%s", describe(all.snapshot()))
			return ""
		}
	}
	if a, b := recv(), recv(); a == b {
		t.Fatalf("both requests travelled on thread %s", a)
	}
	replies := []string{pr.next(t).Payload.(*Fan).Step, pr.next(t).Payload.(*Fan).Step}
	out.waitFor(t, "completion", kind(pump.EventComplete))
	slices.Sort(replies)
	if want := []string{"one", "two"}; !slices.Equal(replies, want) {
		t.Fatalf("replies reaching fan: %v, want %v", replies, want)
	}
	for _, e := range all.snapshot() {
		if e.Kind == pump.EventDeadLetter || e.Kind == pump.EventHuh {
			t.Errorf("unexpected %s: %s", e.Kind, e.Error)
		}
	}
}
