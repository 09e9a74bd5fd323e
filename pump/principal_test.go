package pump_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// journalLog keeps every journaled record.
type journalLog struct {
	mu      sync.Mutex
	records []pump.Record
}

func (j *journalLog) Record(r pump.Record) {
	j.mu.Lock()
	j.records = append(j.records, r)
	j.mu.Unlock()
}

func (j *journalLog) snapshot() []pump.Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]pump.Record(nil), j.records...)
}

// securityLog counts slog records carrying security=true.
type securityLog struct {
	mu     sync.Mutex
	events []slog.Record
}

func (h *securityLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *securityLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "security" && a.Value.Kind() == slog.KindBool && a.Value.Bool() {
			h.mu.Lock()
			h.events = append(h.events, r.Clone())
			h.mu.Unlock()
			return false
		}
		return true
	})
	return nil
}
func (h *securityLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *securityLog) WithGroup(string) slog.Handler      { return h }

func (h *securityLog) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// TestInjectAsIdentity drives InjectAs across two users: each forgery is
// refused with the canned <huh>, logged as a security event and journaled only
// as alice's or bob's own refusal on no thread; the victim's thread gets no
// record at all. The legitimate cases still join their conversations.
func TestInjectAsIdentity(t *testing.T) {
	journal := &journalLog{}
	sec := &securityLog{}
	hold := newGate()
	t.Cleanup(hold.open)
	slow := listenerOf(t, "slow", func(context.Context, *Slow, xmlpipe.Metadata) (xmlpipe.Response, error) {
		hold.wait(t.Context()) // keeps the conversations live while the test names their threads
		return nil, nil
	})
	p := startPump(t, pump.Options{Journal: journal, Logger: slog.New(sec)}, slow)
	alice := pump.Principal{From: "websocket:alice", User: "alice"}
	aliceAPI := pump.Principal{From: "api:alice", User: "alice"}
	bob := pump.Principal{From: "websocket:bob", User: "bob"}
	payload := `<Slow xmlns=""><Text>x</Text></Slow>`
	inject := func(who pump.Principal, from, thread string) (string, error) {
		return p.InjectAs(waitCtx(t), envelope(from, "slow", thread, payload), nil, who)
	}

	aliceThread := stage.NewThreadID()
	if got, err := inject(alice, alice.From, aliceThread); err != nil || got != aliceThread {
		t.Fatalf("alice's own new conversation: %q, %v", got, err)
	}
	handed, err := p.Threads().Extend(aliceThread, "slow") // a thread of alice's conversation (a reply would name one)
	if err != nil {
		t.Fatal(err)
	}
	// A conversation a transport began for "peer:alice" without a session
	// (plain Inject): not one of alice's session identities.
	peerThread := stage.NewThreadID()
	if _, err := injectErr(t, p, envelope("peer:alice", "slow", peerThread, payload), nil); err != nil {
		t.Fatalf("plain inject: %v", err)
	}

	tests := []struct {
		name    string
		who     pump.Principal
		from    string
		thread  string
		wantErr error
	}{
		{"own thread", alice, alice.From, aliceThread, nil},
		{"own thread from another session of the user", aliceAPI, aliceAPI.From, aliceThread, nil},
		{"thread handed within the own conversation", alice, alice.From, handed, nil},
		{"unknown thread starts a conversation", bob, bob.From, stage.NewThreadID(), nil},
		{"forged from", bob, alice.From, stage.NewThreadID(), pump.ErrForgedSender},
		{"forged from on the victim's thread", bob, alice.From, aliceThread, pump.ErrForgedSender},
		{"forged reserved from", bob, "core", stage.NewThreadID(), pump.ErrForgedSender},
		{"another user's thread", bob, bob.From, aliceThread, pump.ErrForeignThread},
		{"another user's handed thread", bob, bob.From, handed, pump.ErrForeignThread},
		{"same user name, not a session identity", alice, alice.From, peerThread, pump.ErrForeignThread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(journal.snapshot())
			secBefore := sec.count()
			got, err := inject(tt.who, tt.from, tt.thread)
			if tt.wantErr == nil {
				if err != nil || got != tt.thread {
					t.Fatalf("InjectAs = %q, %v; want %q accepted", got, err, tt.thread)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, failure.ErrForbiddenSender) {
				t.Fatalf("InjectAs error %v, want %v", err, tt.wantErr)
			}
			f := failureOf(err)
			if f == nil || f.Canned() != failure.HuhEnvelope {
				t.Errorf("failure %v, want the canned %q", f, failure.HuhEnvelope)
			}
			if n := sec.count() - secBefore; n != 1 {
				t.Errorf("%d security events logged, want 1", n)
			}
			recs := journal.snapshot()[before:]
			if len(recs) != 1 {
				t.Fatalf("journaled %+v, want one refusal", recs)
			}
			r := recs[0]
			if r.Kind != pump.RecordHuh || r.From != tt.who.From || r.Thread != "" || r.Conversation != "" ||
				len(r.Envelope) != 0 {
				t.Errorf("refusal journaled as %+v, want a <huh> from %s on no thread", r, tt.who.From)
			}
		})
	}
	for _, r := range journal.snapshot() {
		if r.From != "" && r.From != alice.From && r.From != aliceAPI.From && r.From != bob.From && r.From != "peer:alice" {
			t.Errorf("journaled from %q: %+v", r.From, r)
		}
		if (r.Thread == aliceThread || r.Thread == handed || r.Conversation == aliceThread) &&
			r.From != alice.From && r.From != aliceAPI.From {
			t.Errorf("alice's conversation got a record from %q: %+v", r.From, r)
		}
	}
	if !p.Threads().Known(aliceThread) || !p.Threads().Known(handed) {
		t.Error("alice's threads ended")
	}
}

func TestInjectAsEmptyPrincipal(t *testing.T) {
	p := startPump(t, pump.Options{}, sink[Ping](t, "ping", newProbe()))
	_, err := p.InjectAs(waitCtx(t), envelope("x", "ping", stage.NewThreadID(), `<Ping xmlns=""><Text>a</Text></Ping>`),
		nil, pump.Principal{})
	if !errors.Is(err, failure.ErrForbiddenSender) {
		t.Errorf("InjectAs without a principal: %v", err)
	}
}

// historyJournal is a journal with a ThreadHistory of ended threads.
type historyJournal struct {
	journalLog
	mu      sync.Mutex
	origins map[string]string // thread → origin
	asked   []string
	err     error
}

func (h *historyJournal) ThreadOrigin(thread string) (string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, thread)
	o, ok := h.origins[thread]
	return o, ok, h.err
}

func (h *historyJournal) askedAbout(thread string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.asked, thread)
}

// TestInjectAsEndedThread: a thread the registry no longer holds is checked
// against the journal's history, unless the transport chose the id itself.
func TestInjectAsEndedThread(t *testing.T) {
	ended := stage.NewThreadID()
	j := &historyJournal{origins: map[string]string{ended: "websocket:alice"}}
	p := startPump(t, pump.Options{Journal: j}, sink[Ping](t, "ping", newProbe()))
	alice := pump.Principal{From: "console:alice", User: "alice"}
	bob := pump.Principal{From: "api:bob", User: "bob"}
	const payload = `<Ping xmlns=""><Text>a</Text></Ping>`
	tests := []struct {
		name    string
		who     pump.Principal
		thread  string
		lookup  bool
		wantErr error
	}{
		{"owner reopens an ended thread", alice, ended, true, nil},
		{"another user names an ended thread", bob, ended, true, pump.ErrForeignThread},
		{"never seen", bob, stage.NewThreadID(), true, nil},
		{"fresh id: no lookup", pump.Principal{From: bob.From, User: bob.User, FreshThread: true},
			stage.NewThreadID(), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.InjectAs(waitCtx(t), envelope(tt.who.From, "ping", tt.thread, payload), nil, tt.who)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("InjectAs error %v, want %v", err, tt.wantErr)
			}
			if got := j.askedAbout(tt.thread); got != tt.lookup {
				t.Errorf("journal asked about the thread: %v, want %v", got, tt.lookup)
			}
		})
	}
	t.Run("lookup fails: refused", func(t *testing.T) {
		j.mu.Lock()
		j.err = errors.New("disk on fire")
		j.mu.Unlock()
		_, err := p.InjectAs(waitCtx(t), envelope(bob.From, "ping", stage.NewThreadID(), payload), nil, bob)
		if !errors.Is(err, pump.ErrForeignThread) {
			t.Errorf("InjectAs error %v, want ErrForeignThread", err)
		}
	})
}

func TestPrincipalOwns(t *testing.T) {
	alice := pump.Principal{From: "websocket:alice", User: "alice"}
	tests := []struct {
		origin string
		want   bool
	}{
		{"websocket:alice", true},
		{"console:alice", true},
		{"api:alice", true},
		{"api:alice2", false},
		{"api:bob", false},
		{"peer:alice", false},
		{"alice", false},
		{"system", false},
		{"", false},
		{"websocket:alice:x", false},
	}
	for _, tt := range tests {
		if got := alice.Owns(tt.origin); got != tt.want {
			t.Errorf("Owns(%q) = %v, want %v", tt.origin, got, tt.want)
		}
	}
	if (pump.Principal{From: "peer:x"}).Owns("websocket:") {
		t.Error("a principal without a user owns the empty user's conversations")
	}
	if !(pump.Principal{From: "peer:x"}).Owns("peer:x") {
		t.Error("a principal without a user does not own its own identity's conversations")
	}
}

// BenchmarkInjectAs compares the ingress of one message without a principal
// (InjectWait), with one (InjectAs: the <from> and live-thread checks), and
// with one whose new thread id is looked up in a ThreadHistory (here an
// in-memory one: the store's lookup costs its own, see
// registry/store.BenchmarkThreadLookup).
func BenchmarkInjectAs(b *testing.B) {
	done := make(chan struct{}, 1024)
	ping := listenerOf(b, "ping", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
		done <- struct{}{}
		return nil, nil
	})
	j := &historyJournal{origins: map[string]string{}}
	p, err := pump.New(pump.Options{Organism: "bench", Journal: j, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Register(ping); err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	who := pump.Principal{From: "websocket:alice", User: "alice"}
	fresh := who
	fresh.FreshThread = true
	const payload = `<Ping xmlns=""><Text>hello</Text></Ping>`
	run := func(b *testing.B, inject func(raw []byte) error) {
		b.ReportAllocs()
		for b.Loop() {
			j.mu.Lock()
			j.asked = j.asked[:0]
			j.mu.Unlock()
			if err := inject(envelope(who.From, "ping", stage.NewThreadID(), payload)); err != nil {
				b.Fatal(err)
			}
			<-done
		}
	}
	ctx := context.Background()
	b.Run("InjectWait", func(b *testing.B) {
		run(b, func(raw []byte) error { _, err := p.InjectWait(ctx, raw, nil); return err })
	})
	b.Run("InjectAs/fresh", func(b *testing.B) {
		run(b, func(raw []byte) error { _, err := p.InjectAs(ctx, raw, nil, fresh); return err })
	})
	b.Run("InjectAs/history", func(b *testing.B) {
		run(b, func(raw []byte) error { _, err := p.InjectAs(ctx, raw, nil, who); return err })
	})
}

// TestMetadataUser: a handler learns the user whose conversation it works
// in — the authenticated user of the session that began it — at every hop
// of the conversation, and "" for traffic no session vouches for.
func TestMetadataUser(t *testing.T) {
	pr := newProbe()
	first := listenerOf(t, "first", func(_ context.Context, p *ChainA, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		pr.record("first", p, md)
		return xmlpipe.Send("second", &ChainB{Text: p.Text}), nil
	})
	p := startPump(t, pump.Options{}, first, sink[ChainB](t, "second", pr))
	for _, tc := range []struct {
		who  *pump.Principal
		from string
		want string
	}{
		{&pump.Principal{From: "api:alice", User: "alice"}, "api:alice", "alice"},
		{&pump.Principal{From: "websocket:bob", User: "bob"}, "websocket:bob", "bob"},
		{&pump.Principal{From: "peer-b"}, "peer-b", ""}, // a federation peer: no user
		{nil, "console", ""},      // the organism's own console
		{nil, "script:carol", ""}, // not a session identity
		{&pump.Principal{From: "console:dave", User: "dave"}, "console:dave", "dave"},
	} {
		env := envelope(tc.from, "first", stage.NewThreadID(), `<ChainA xmlns=""><Text>x</Text></ChainA>`)
		var err error
		if tc.who != nil {
			_, err = p.InjectAs(waitCtx(t), env, nil, *tc.who)
		} else {
			_, err = p.InjectWait(waitCtx(t), env, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, hop := range []string{"first", "second"} {
			c := pr.next(t)
			if c.Listener != hop || c.MD.User != tc.want {
				t.Errorf("from %s: %s saw user %q, want %q", tc.from, c.Listener, c.MD.User, tc.want)
			}
		}
	}
}
