package pump

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// A kill ends a conversation for good: Kill records it (in memory, and
// with a KillJournal durably, before it returns), no outside message may
// continue it afterwards (ErrContinueKilled), and a durable organism's
// recovery delivers none of its journaled messages again.

// KillJournal is an optional capability of a Journal that makes kills
// final across restarts.
type KillJournal interface {
	// RecordKill records that conversation conv was killed; the record is
	// committed when it returns.
	RecordKill(conv string) error
	// Killed reports whether conversation conv was killed, in this run or
	// an earlier one.
	Killed(conv string) (bool, error)
}

// ErrContinueKilled is the error of an outside message that names the
// thread of a killed conversation: it is refused (its sender gets a <huh>
// saying so, InjectWait and Ask return it) and a new conversation must be
// begun instead. It wraps ErrConversationKilled and
// failure.ErrKilledConversation.
var ErrContinueKilled error = continueKilledError{}

// continueKilledError is ErrContinueKilled's type.
type continueKilledError struct{}

// Error says what to do.
func (continueKilledError) Error() string { return "conversation was killed; start a new one" }

// Unwrap returns the sentinels it stands for.
func (continueKilledError) Unwrap() []error {
	return []error{ErrConversationKilled, failure.ErrKilledConversation}
}

// killsRemembered bounds how many killed conversations a pump remembers in
// memory; a KillJournal remembers every one.
const killsRemembered = 1 << 16

// recentKills is the set of the conversations most recently killed.
type recentKills struct {
	// any is set once a conversation was killed: until then, has answers
	// every outside message without a lock.
	any   atomic.Bool
	mu    sync.RWMutex
	set   map[string]struct{} // guarded by mu
	order []string            // guarded by mu; oldest first
}

// add remembers conv, forgetting the oldest past killsRemembered.
func (k *recentKills) add(conv string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.set == nil {
		k.set = map[string]struct{}{}
	}
	if _, ok := k.set[conv]; ok {
		return
	}
	k.set[conv] = struct{}{}
	k.any.Store(true)
	k.order = append(k.order, conv)
	if len(k.order) > killsRemembered {
		delete(k.set, k.order[0])
		k.order = k.order[1:]
	}
}

// has reports whether conv is remembered.
func (k *recentKills) has(conv string) bool {
	if !k.any.Load() {
		return false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	_, ok := k.set[conv]
	return ok
}

// recordKill records durably, with a KillJournal, that conv was killed.
func (p *Pump) recordKill(conv string) error {
	if kj, ok := p.journal.(KillJournal); ok {
		if err := kj.RecordKill(conv); err != nil {
			return fmt.Errorf("kill %s: not recorded: %w", conv, err)
		}
	}
	return nil
}

// WasKilled reports whether conversation conv was killed: in this run, or
// (with a KillJournal) in an earlier one.
func (p *Pump) WasKilled(conv string) (bool, error) {
	if p.kills.has(conv) {
		return true, nil
	}
	if kj, ok := p.journal.(KillJournal); ok {
		return kj.Killed(conv)
	}
	return false, nil
}

// refuseKilled returns the *failure.Failure wrapping ErrContinueKilled of
// an outside message on thread when thread's conversation was killed (nil
// otherwise). A live thread belongs to a conversation that runs, unless
// Kill is ending it now; a thread its sender just minted (FreshThread)
// belongs to none, so neither asks the journal.
func (p *Pump) refuseKilled(w *work, thread string) error {
	conv := p.threads.Root(thread)
	live := conv != ""
	if !live {
		conv = thread
	}
	killed := p.kills.has(conv)
	if !killed && !live && (w.principal == nil || !w.principal.FreshThread) {
		var err error
		if killed, err = p.WasKilled(conv); err != nil {
			p.log.Error("killed conversations lookup failed: refusing the message", "thread", thread, "error", err)
			return &failure.Failure{Stage: failure.StageThread, Err: fmt.Errorf("%w: %w", failure.ErrHandler, err)}
		}
	}
	if !killed {
		return nil
	}
	return &failure.Failure{Stage: failure.StageThread, Err: ErrContinueKilled,
		Diagnostics: []failure.Diagnostic{{Stage: failure.StageThread, Msg: "conversation " + conv + " was killed"}}}
}
