package pump_test

import (
	"context"
	"errors"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestEndedInnerThreadIsItsConversations: an inner hop's thread that ended
// while its conversation still runs (alice's fwd sent to jobs, which
// answered, and to slow, still running) belongs to that conversation, also
// for an in-memory organism that has no journal to ask: CheckThread and
// InjectAs let alice's sessions name it and refuse bob (ErrForeignThread),
// as for a live thread of alice's — so a transport that decides by
// CheckThread who may kill a conversation never lets bob stop alice's
// through it.
func TestEndedInnerThreadIsItsConversations(t *testing.T) {
	fwd := listenerOf(t, "fwd", func(_ context.Context, in *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "done" { // jobs' answer
			return nil, nil
		}
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "jobs", Payload: &Job{Label: in.Text}},
			&xmlpipe.SendResponse{To: "slow", Payload: &Pong{Text: in.Text}}), nil
	})
	hop := make(chan string, 1)
	jobs := listenerOf(t, "jobs", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Label == "first" {
			hop <- md.ThreadID
		}
		return xmlpipe.Respond(&Ping{Text: "done"}), nil
	})
	release := newGate()
	slow := listenerOf(t, "slow", func(ctx context.Context, _ *Pong, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		release.wait(ctx)
		return nil, nil
	})
	p := startPump(t, pump.Options{}, fwd, jobs, slow)
	t.Cleanup(release.open) // before the pump's shutdown: slow returns
	ended := make(chan string, 16)
	p.Threads().OnEnd(func(ids []string) {
		for _, id := range ids {
			select {
			case ended <- id:
			default:
			}
		}
	})
	alice := pump.Principal{From: "websocket:alice", User: "alice"}
	aliceAPI := pump.Principal{From: "api:alice", User: "alice"}
	bob := pump.Principal{From: "api:bob", User: "bob"}
	conv, err := p.InjectAs(waitCtx(t), envelope(alice.From, "fwd", stage.NewThreadID(), `<Ping xmlns=""><Text>first</Text></Ping>`), nil, alice)
	if err != nil {
		t.Fatalf("alice's conversation: %v", err)
	}
	inner := <-hop
	for id := ""; id != inner; { // jobs answered: its thread ends
		select {
		case id = <-ended:
		case <-waitCtx(t).Done():
			t.Fatal("jobs' thread never ended")
		}
	}
	if inner == conv || p.Threads().Known(inner) || !p.Threads().Known(conv) {
		t.Fatalf("precondition: jobs ran on %s, an inner thread that ended, in conversation %s still running", inner, conv)
	}
	tests := []struct {
		name    string
		who     pump.Principal
		wantErr error
	}{
		{"the owner's session", alice, nil},
		{"another session of the owner", aliceAPI, nil},
		{"another user", bob, pump.ErrForeignThread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.CheckThread(tt.who, inner); !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("CheckThread = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				return
			}
			_, err := p.InjectAs(waitCtx(t), envelope(tt.who.From, "jobs", inner, `<Job xmlns=""><Label>x</Label></Job>`),
				nil, tt.who)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("InjectAs on the ended thread = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
