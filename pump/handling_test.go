package pump_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestMessageSeq: a handler learns the journal seq of the message it
// handles — distinct for two messages with the same payload, the same when
// the message is re-delivered after a restart (then marked recovered) —
// and 0 where nothing is journaled. xmlpipe.MessageSeq tells the handler
// the same seq, and the message's history slot records it.
func TestMessageSeq(t *testing.T) {
	type handling struct {
		seq       int64
		recovered bool
	}
	seen, slotSeqs := make(chan handling, 4), make(chan []int64, 4)
	var history *registry.ContextBuffer // the pump's, set before a message is sent
	l := listenerOf(t, "seqs", func(ctx context.Context, _ *Ping, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		var recorded []int64
		if tc, ok := history.Thread(md.ThreadID); ok {
			for _, s := range tc.Slots() {
				recorded = append(recorded, s.Seq)
			}
		}
		slotSeqs <- recorded
		seq, recovered := pump.MessageSeq(ctx)
		if got := xmlpipe.MessageSeq(ctx); got != seq {
			t.Errorf("xmlpipe.MessageSeq %d, pump.MessageSeq %d", got, seq)
		}
		seen <- handling{seq, recovered}
		return nil, nil
	})
	next := func() handling {
		t.Helper()
		select {
		case h := <-seen:
			return h
		case <-time.After(30 * time.Second):
			t.Fatal("the handler never ran")
			return handling{}
		}
	}

	j := newMarkJournal()
	p := startPump(t, pump.Options{Journal: j}, l)
	history = p.Context()
	mustSend(t, p, client, "seqs", &Ping{Text: "same"}, nil)
	first := next()
	mustSend(t, p, client, "seqs", &Ping{Text: "same"}, nil)
	second := next()
	if first.seq <= 0 || second.seq <= 0 || first.seq == second.seq || first.recovered || second.recovered {
		t.Fatalf("two messages handled as %+v and %+v, want two distinct seqs, not recovered", first, second)
	}
	if diff := cmp.Diff([][]int64{{first.seq}, {second.seq}}, [][]int64{<-slotSeqs, <-slotSeqs}); diff != "" {
		t.Errorf("the messages' history slots record seqs (-want +got):\n%s", diff)
	}
	var env []byte
	j.mu.Lock()
	for i, r := range j.records {
		if int64(i+1) == first.seq {
			env = r.Envelope
		}
	}
	j.mu.Unlock()
	if env == nil {
		t.Fatalf("seq %d is not the journal's", first.seq)
	}
	if err := p.Recover(waitCtx(t), pump.Recovered{Seq: first.seq, Envelope: env, External: true}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != (handling{first.seq, true}) {
		t.Fatalf("the re-delivered message handled as %+v, want seq %d recovered", got, first.seq)
	}

	bare := startPump(t, pump.Options{}, listenerOf(t, "seqs", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		seq, recovered := pump.MessageSeq(ctx)
		seen <- handling{seq, recovered}
		return nil, nil
	}))
	mustSend(t, bare, client, "seqs", &Ping{Text: "same"}, nil)
	if got := next(); got != (handling{}) {
		t.Fatalf("without a journal handled as %+v, want no seq", got)
	}
}
