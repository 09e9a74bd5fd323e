package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// recoveryPage is how many undelivered journal entries recovery reads at a
// time; each page owns its bytes, so memory stays bounded whatever the
// backlog.
const recoveryPage = 256

// RecoveryStatus is the progress of re-delivering, after a restart, the
// journaled messages whose handling had not finished.
type RecoveryStatus struct {
	// Active is true while recovery runs; Done once it has finished (or
	// failed: Err).
	Active, Done bool
	// Seq is the journal seq recovery has reached, Until the last seq it
	// will look at (the journal's end when the organism started).
	Seq, Until int64
	// Redelivered counts messages handed to the pump again; Skipped those
	// whose handling had finished (their output is journaled, or their thread
	// has ended) and were only marked delivered.
	Redelivered, Skipped int
	// Err is why recovery stopped early ("" when it did not).
	Err string
}

// recovery runs and reports the organism's background recovery.
type recovery struct {
	mu     sync.Mutex
	status RecoveryStatus
	cancel context.CancelFunc
	done   chan struct{}
}

// Recovery returns the progress of the organism's recovery (zero for an
// in-memory organism or one without a journal).
func (o *Organism) Recovery() RecoveryStatus {
	if o.recovery == nil {
		return RecoveryStatus{Done: true}
	}
	o.recovery.mu.Lock()
	defer o.recovery.mu.Unlock()
	return o.recovery.status
}

// WaitRecovered returns once recovery has finished (at once when there is
// none), with its error, or ctx's.
func (o *Organism) WaitRecovered(ctx context.Context) error {
	r := o.recovery
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if st := o.Recovery(); st.Err != "" {
		return errors.New(st.Err)
	}
	return nil
}

// startRecovery re-delivers, on a goroutine of its own, the journaled
// messages that reached a listener and were never marked delivered, so the
// organism serves (and /health answers) at once whatever the backlog. The
// backlog streams from the journal a page at a time and re-enters the pump
// under its in-flight bound.
func (o *Organism) startRecovery() {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recovery{cancel: cancel, done: make(chan struct{})}
	r.status = RecoveryStatus{Active: true, Until: o.durable.store.Durable()}
	o.recovery = r
	go func() {
		defer close(r.done)
		err := o.recoverUndelivered(ctx, r)
		r.mu.Lock()
		r.status.Active, r.status.Done = false, true
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, pump.ErrClosed) {
			r.status.Err = err.Error()
		}
		st := r.status
		r.mu.Unlock()
		switch {
		case st.Err != "":
			o.log.Error("recovery of undelivered messages stopped", "error", st.Err, "redelivered", st.Redelivered,
				"already handled", st.Skipped)
		case st.Redelivered > 0 || st.Skipped > 0:
			o.log.Info("recovered undelivered messages from the journal", "redelivered", st.Redelivered,
				"already handled", st.Skipped)
		}
	}()
}

// stopRecovery cancels a running recovery and waits for it.
func (o *Organism) stopRecovery() {
	if r := o.recovery; r != nil {
		r.cancel()
		<-r.done
	}
}

// recoverUndelivered hands every undelivered journal entry up to the
// status's Until to Pump.Recover, in journal order. A message whose
// listener's output is already journaled later in its conversation had been
// handled (only its mark was lost): it is marked delivered instead, so no
// handler runs twice for output it already produced. So is every message
// of a conversation the store records as killed (store.Store.Killed: a
// kill is final, whether its messages were queued, held by a halt or a
// pause, or running when it came), and, for a journal written before kills
// were recorded, one of a conversation whose kill's dead letter is
// journaled after it: a killed conversation does not run again after a
// stop or a crash. A callable call's conversation left unanswered by a
// crash is killed rather than re-delivered (callOrphans): its call, itself
// re-delivered, begins it anew.
func (o *Organism) recoverUndelivered(ctx context.Context, r *recovery) error {
	s := o.durable.store
	until := r.status.Until
	page, err := s.UndeliveredAfter(0, recoveryPage)
	if err != nil || len(page) == 0 {
		return err
	}
	handled, killed, err := lastSends(s, page[0].Seq-1, until)
	if err != nil {
		return err
	}
	turns, orphans := turnSeqs{}, callOrphans{}
	for len(page) > 0 {
		for _, e := range page {
			if e.Seq > until {
				return nil
			}
			skipped, err := o.recoverOne(ctx, s, e, handled, killed, turns, orphans)
			if err != nil {
				return err
			}
			r.mu.Lock()
			r.status.Seq = e.Seq
			if skipped {
				r.status.Skipped++
			} else {
				r.status.Redelivered++
			}
			r.mu.Unlock()
		}
		if page, err = s.UndeliveredAfter(page[len(page)-1].Seq, recoveryPage); err != nil {
			return err
		}
	}
	return nil
}

// recoverOne re-delivers e, or marks it delivered when its handling had
// finished or its conversation was killed; it reports which.
func (o *Organism) recoverOne(ctx context.Context, s *store.Store, e store.Entry, handled, killed map[string]int64,
	turns turnSeqs, orphans callOrphans) (skipped bool, err error) {
	if e.Conversation != "" {
		final, err := s.Killed(e.Conversation)
		if err != nil {
			return false, fmt.Errorf("recover seq %d: %w", e.Seq, err)
		}
		if final || killed[e.Conversation] > e.Seq {
			o.log.Info("recovery: not re-delivered, its conversation was killed", "seq", e.Seq, "thread", e.Conversation)
			return true, s.MarkDelivered(e.Seq)
		}
		orphan, err := orphans.of(ctx, o, s, e.Conversation)
		if err != nil {
			return false, fmt.Errorf("recover seq %d: %w", e.Seq, err)
		}
		if orphan {
			return true, s.MarkDelivered(e.Seq)
		}
	}
	if e.Conversation != "" && handled[sendKey(e.Conversation, e.Listener)] > e.Seq && !o.gov.awaits(e.Seq, e.Listener) {
		return true, s.MarkDelivered(e.Seq)
	}
	r := pump.Recovered{Seq: e.Seq, Envelope: e.Bytes, External: e.Direction == store.Inbound,
		Conversation: e.Conversation, Thread: e.Thread, Journaled: e.Time}
	if !r.External && r.Conversation != "" {
		if r.Turn, err = turns.turnOf(s, r.Conversation, r.Seq); err != nil {
			return false, fmt.Errorf("recover seq %d: %w", e.Seq, err)
		}
	}
	err = o.Pump.Recover(ctx, r)
	switch {
	case errors.Is(err, pump.ErrRecoverEnded):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("recover seq %d: %w", e.Seq, err)
	}
	return false, nil
}

// lastSends maps, for the journal entries after from up to until, each
// (conversation, sender) to the last seq that sender journaled in that
// conversation: a listener that sent after a message reached it had handled
// that message. killed maps each conversation a kill dropped a message of
// (a dead letter saying pump.KilledReason, or pump.CancelledReason: a
// cancel's) to the last such seq: the messages of it journaled before were
// in flight when it was killed or its answer cancelled.
func lastSends(s *store.Store, from, until int64) (sends, killed map[string]int64, err error) {
	sends, killed = map[string]int64{}, map[string]int64{}
	err = s.Each(from, func(e *store.Entry) error {
		if e.Seq > until {
			return errStopScan
		}
		if e.Conversation == "" {
			return nil
		}
		sends[sendKey(e.Conversation, e.From)] = e.Seq // keys are fresh strings: the entry's are not kept
		if e.Kind == store.DeadLetter && (strings.HasPrefix(e.Diagnostics, pump.KilledReason) ||
			strings.HasPrefix(e.Diagnostics, pump.CancelledReason)) {
			killed[strings.Clone(e.Conversation)] = e.Seq
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return sends, killed, err
}

// errStopScan ends lastSends' scan at its bound.
var errStopScan = errors.New("stop scan")

// sendKey is the lastSends key of a sender in a conversation.
func sendKey(conv, from string) string { return conv + "\x00" + strings.ToLower(from) }

// turnSeqs caches, per conversation, the seqs of the outside messages
// delivered on it (ascending), read once per conversation a recovery meets.
type turnSeqs map[string][]int64

// turnOf returns the pump.Recovered.Turn of a listener's message journaled
// as seq on conv: the seq of the last outside message delivered on conv
// before it (0: none journaled).
func (t turnSeqs) turnOf(s *store.Store, conv string, seq int64) (int64, error) {
	seqs, ok := t[conv]
	if !ok {
		entries, err := s.Conversation(conv)
		if err != nil {
			return 0, fmt.Errorf("the turns of conversation %s: %w", conv, err)
		}
		seqs = []int64{}
		for _, e := range entries {
			if e.Direction == store.Inbound && e.Kind == store.Message && e.Listener != "" {
				seqs = append(seqs, e.Seq)
			}
		}
		t[conv] = seqs
	}
	turn := int64(0)
	for _, in := range seqs {
		if in > seq {
			break
		}
		turn = in
	}
	return turn, nil
}
