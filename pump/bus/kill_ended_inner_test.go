package bus

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Fork is what forkOrganism's fork takes: a conversation's first message,
// or quick's answer ("done").
type Fork struct {
	Text string
}

// ForkQuick is what quick takes: it answers at once, ending its thread.
type ForkQuick struct {
	Text string
}

// ForkHold is what hold takes: it runs until its call is cancelled.
type ForkHold struct {
	Text string
}

// forkOrganism is the hello-world organism with three Go listeners: fork
// sends each conversation's first message to quick, which answers (its
// thread ends), and to hold, which runs until cancelled — a conversation
// that still runs after one of its inner threads ended. quick reports its
// thread on hops.
func forkOrganism(hops chan<- string) buildFunc {
	return forkOrganismOn(hops, helloWorld)
}

// forkOrganismOn is forkOrganism over the organism base assembles.
func forkOrganismOn(hops chan<- string, base buildFunc) buildFunc {
	fork := organism.Func("fork", "Forks work", func(_ context.Context, p *Fork, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if p.Text == "done" {
			return nil, nil
		}
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "quick", Payload: &ForkQuick{Text: p.Text}},
			&xmlpipe.SendResponse{To: "hold", Payload: &ForkHold{Text: p.Text}}), nil
	})
	quick := organism.Func("quick", "Answers at once", func(_ context.Context, _ *ForkQuick, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		hops <- md.ThreadID
		return xmlpipe.Respond(&Fork{Text: "done"}), nil
	})
	hold := organism.Func("hold", "Runs until cancelled", func(ctx context.Context, _ *ForkHold, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return func(o organism.Options) (*organism.Organism, error) {
		o.Listeners = append(o.Listeners, fork, quick, hold)
		return base(o)
	}
}

// forkProfiledOrganism is forkOrganism with a profile, forks, that holds
// its three listeners.
func forkProfiledOrganism(hops chan<- string) buildFunc {
	return forkOrganismOn(hops, func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.LoadWith("../../organism.yaml", []string{"fork", "quick", "hold"})
		if err != nil {
			return nil, err
		}
		if cfg.Profiles == nil {
			cfg.Profiles = map[string]config.Profile{}
		}
		cfg.Profiles["forks"] = config.Profile{Description: "The fork organism's listeners",
			Listeners: []string{"fork", "quick", "hold"}}
		return organism.New(cfg, o)
	})
}

// TestKillNamingEndedInnerThread: a conversation still runs (hold) after
// one of its inner threads ended (quick answered). POST
// /api/v1/threads/{that thread}/kill by another operator answers 404, as
// for a live thread of the conversation, and stops nothing, and a /ws send
// of theirs on it is refused as on the conversation's own thread; by the
// conversation's owner, or by an admin, it kills the conversation and
// answers as a kill naming its root does.
func TestKillNamingEndedInnerThread(t *testing.T) {
	hops := make(chan string, 4)
	f := newFixtureWith(t, forkOrganism(hops))
	olga, bob, ada := f.loginAs("olga", auth.Operator), f.loginAs("bob", auth.Operator), f.loginAs("ada", auth.Admin)
	ended := make(chan string, 64)
	f.org.Pump.Threads().OnEnd(func(ids []string) {
		for _, id := range ids {
			select {
			case ended <- id:
			default:
			}
		}
	})
	// begin starts one of olga's conversations and returns it and the
	// inner thread of quick, once that thread has ended.
	begin := func() (conv, inner string) {
		t.Helper()
		conv = f.inject(olga, "fork", "<Fork><Text>go</Text></Fork>")
		select {
		case inner = <-hops:
		case <-time.After(waitTimeout):
			t.Fatal("quick never ran")
		}
		for id := ""; id != inner; {
			select {
			case id = <-ended:
			case <-time.After(waitTimeout):
				t.Fatal("quick's thread never ended")
			}
		}
		if inner == conv || f.org.Pump.Threads().Known(inner) || !f.org.Pump.Threads().Known(conv) {
			t.Fatalf("precondition: quick ran on %s, an inner thread that ended, in conversation %s still running", inner, conv)
		}
		return conv, inner
	}
	type answer struct {
		Status int
		Body   map[string]any
	}
	kill := func(token, id string) answer {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/threads/"+id+"/kill", token, nil)
		return answer{status, body}
	}

	conv, inner := begin()
	notFound := answer{404, map[string]any{"error": "Thread not found"}}
	if diff := cmp.Diff(notFound, kill(bob, inner)); diff != "" {
		t.Errorf("bob kills olga's conversation by its ended inner thread (-want +got):\n%s", diff)
	}
	if !f.org.Pump.Threads().Known(conv) {
		t.Fatal("bob's refused kill ended olga's conversation")
	}
	c := f.dial("/ws", bob)
	readFrame(t, c)
	onRoot := wsSendOn(t, c, "fork", "mine", conv)
	if onRoot["type"] != "error" {
		t.Fatalf("precondition: bob's send on olga's conversation was taken: %v", onRoot)
	}
	if diff := cmp.Diff(onRoot, wsSendOn(t, c, "fork", "mine", inner)); diff != "" {
		t.Errorf("bob's /ws send on olga's ended inner thread, against one on her conversation (-root +inner):\n%s", diff)
	}
	c.Close()

	for _, who := range []struct{ name, token string }{{"the owner", olga}, {"an admin", ada}} {
		t.Run(who.name, func(t *testing.T) {
			conv, inner := conv, inner
			if who.token != olga {
				conv, inner = begin()
			}
			want := answer{200, map[string]any{"thread_id": conv, "status": "killed"}}
			if diff := cmp.Diff(want, kill(who.token, inner)); diff != "" {
				t.Errorf("kill by the ended inner thread (-want +got):\n%s", diff)
			}
			if f.org.Pump.Threads().Known(conv) {
				t.Error("the killed conversation is still live")
			}
			f.waitJournal()
			if status, body, _ := f.do("GET", "/api/v1/threads/"+conv, ada, nil); status != 200 || body["status"] != "killed" {
				t.Errorf("the killed conversation reads %d %v, want killed", status, body)
			}
		})
	}
}

// TestKillNamingEndedInnerThreadReachesProfileStreams: a user with a
// profile kills their conversation by one of its inner threads that
// ended; their own event stream (/api/v1/ws) is told it was killed, as for
// a kill naming the conversation's root.
func TestKillNamingEndedInnerThreadReachesProfileStreams(t *testing.T) {
	hops := make(chan string, 4)
	f := newFixtureWith(t, forkProfiledOrganism(hops))
	secret := f.user("pat", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "pat", "forks"); err != nil {
		t.Fatal(err)
	}
	pat := f.login("pat", secret)
	ended := make(chan string, 64)
	f.org.Pump.Threads().OnEnd(func(ids []string) {
		for _, id := range ids {
			select {
			case ended <- id:
			default:
			}
		}
	})
	stream := f.dial("/api/v1/ws", pat)
	if got := readFrame(t, stream); got["event"] != "connected" {
		t.Fatalf("first frame %v", got)
	}
	conv := f.inject(pat, "fork", "<Fork><Text>go</Text></Fork>")
	var inner string
	select {
	case inner = <-hops:
	case <-time.After(waitTimeout):
		t.Fatal("quick never ran")
	}
	for id := ""; id != inner; {
		select {
		case id = <-ended:
		case <-time.After(waitTimeout):
			t.Fatal("quick's thread never ended")
		}
	}
	if prof, live := f.org.Pump.Threads().Profile(conv); !live || prof != "forks" {
		t.Fatalf("precondition: conversation %s runs under profile %q (live %t), want forks", conv, prof, live)
	}
	if status, body, _ := f.do("POST", "/api/v1/threads/"+inner+"/kill", pat, nil); status != 200 {
		t.Fatalf("kill by the ended inner thread: %d %v", status, body)
	}
	// A conversation begun after the kill: its first frame follows the
	// kill's on the stream.
	next := f.inject(pat, "fork", "<Fork><Text>again</Text></Fork>")
	type update struct{ Thread, Status string }
	var updates []update
	for {
		got := readFrame(t, stream)
		if got["event"] == "thread_created" {
			if th, _ := got["thread"].(map[string]any); th["id"] == next {
				break
			}
		}
		if got["event"] == "thread_updated" && got["thread_id"] == conv {
			id, _ := got["thread_id"].(string)
			status, _ := got["status"].(string)
			updates = append(updates, update{id, status})
		}
	}
	if _, err := f.org.Pump.Kill(next); err != nil {
		t.Errorf("kill the second conversation: %v", err)
	}
	want := update{conv, "killed"}
	if !slices.Contains(updates, want) {
		t.Errorf("the stream of the killer (profile forks) told %v of the conversation, want %v among them", updates, want)
	}
}
