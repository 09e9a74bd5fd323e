package pump_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// killBook is a Journal with the KillJournal capability that keeps its
// kill records in memory: it outlives the pumps a test starts on it, as a
// store outlives a restart.
type killBook struct {
	mu    sync.Mutex
	kills []string
}

func (*killBook) Record(pump.Record) {}

func (k *killBook) RecordKill(conv string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kills = append(k.kills, conv)
	return nil
}

func (k *killBook) Killed(conv string) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.kills {
		if c == conv {
			return true, nil
		}
	}
	return false, nil
}

func (k *killBook) recorded() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.kills...)
}

// TestKillIsFinal: a kill of a running conversation — and of one whose
// message waits at a halted organism — is recorded before Kill returns; a
// message continuing a killed conversation is refused (ErrContinueKilled,
// wrapping ErrConversationKilled, its sender's <huh> saying to start a new
// one), also by a pump started again on the same journal, which has no
// memory of the kill but the journal's; a new conversation with the same
// listener runs.
func TestKillIsFinal(t *testing.T) {
	book := &killBook{}
	started := make(chan string, 4)
	pr := newProbe()
	slow := listenerOf(t, "slow", func(ctx context.Context, in *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Text == "block" {
			started <- md.ThreadID
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		pr.record("slow", in, md)
		return nil, nil
	})
	p := startPump(t, pump.Options{Journal: book}, slow)

	running := mustSend(t, p, client, "slow", &Ping{Text: "block"}, nil)
	<-started
	if conv, err := p.Kill(running); err != nil || conv != running {
		t.Fatalf("Kill(running) = %q, %v; want %q, nil", conv, err, running)
	}
	if _, err := p.Halt(pump.HaltAll); err != nil {
		t.Fatal(err)
	}
	halted := mustSend(t, p, client, "slow", &Ping{Text: "held"}, nil)
	if _, err := p.Kill(halted); err != nil {
		t.Fatalf("Kill(held at a halt) = %v", err)
	}
	if diff := cmp.Diff([]string{running, halted}, book.recorded()); diff != "" {
		t.Errorf("kills recorded when Kill returned (-want +got):\n%s", diff)
	}
	p.Unhalt()

	continueOn := func(t *testing.T, p *pump.Pump, thread string) {
		t.Helper()
		out := newRecorder()
		_, err := injectErr(t, p, envelope(client, "slow", thread, `<Ping xmlns=""><Text>again</Text></Ping>`), out)
		if !errors.Is(err, pump.ErrContinueKilled) || !errors.Is(err, pump.ErrConversationKilled) {
			t.Fatalf("continuing killed %s: %v; want ErrContinueKilled wrapping ErrConversationKilled", thread, err)
		}
		if f := failureOf(err); f == nil || f.Canned() != failure.HuhKilled {
			t.Errorf("continuing killed %s: failure %v; want one whose <huh> says %q", thread, err, failure.HuhKilled)
		}
		huh := out.waitFor(t, "the <huh>", kind(pump.EventHuh))
		if huh.Error != failure.HuhKilled {
			t.Errorf("the sender's <huh> says %q, want %q", huh.Error, failure.HuhKilled)
		}
	}
	for _, thread := range []string{running, halted} {
		continueOn(t, p, thread)
	}
	fresh := mustSend(t, p, client, "slow", &Ping{Text: "new"}, nil)
	if c := pr.next(t); c.MD.ThreadID != fresh {
		t.Errorf("a new conversation with slow ran on %s, want %s", c.MD.ThreadID, fresh)
	}

	restarted := startPump(t, pump.Options{Journal: book}, slow)
	for _, thread := range []string{running, halted} {
		continueOn(t, restarted, thread)
	}
	if killed, err := restarted.WasKilled(running); !killed || err != nil {
		t.Errorf("WasKilled after a restart = %v, %v; want true", killed, err)
	}
	if killed, err := restarted.WasKilled(stage.NewThreadID()); killed || err != nil {
		t.Errorf("WasKilled(never used) = %v, %v; want false", killed, err)
	}
	var ran []string
	for _, c := range pr.all() {
		ran = append(ran, c.MD.ThreadID)
	}
	if diff := cmp.Diff([]string{fresh}, ran); diff != "" {
		t.Errorf("conversations slow handled (-want +got):\n%s", diff)
	}
}
