package pump

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// A kill ends a conversation for good: Kill records it (in memory, and
// with a KillJournal durably, before it returns), no outside message may
// continue it afterwards (ErrContinueKilled), and a durable organism's
// recovery delivers none of its journaled messages again.

// KillJournal makes kills final across restarts: Options.Kills, or an
// optional capability of the Options.Journal.
type KillJournal interface {
	// RecordKill records that conversation conv was killed; the record is
	// committed when it returns.
	RecordKill(conv string) error
	// Killed reports whether conversation conv was killed, in this run or
	// an earlier one.
	Killed(conv string) (bool, error)
}

// ThreadKillJournal is an optional capability of a KillJournal: whether the
// conversation that a thread belonged to — any thread of it, not only the
// conversation id — was killed. The pump asks it only about a thread that
// is not live, named by an outside message, once some conversation was
// killed (an implementation answers without a lookup until then).
type ThreadKillJournal interface {
	// KilledThread returns the conversation thread belonged to and true
	// when that conversation was killed ("", false otherwise).
	KilledThread(thread string) (conv string, killed bool, err error)
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

// recentKills is the set of the conversations most recently killed, with
// the threads each had when it was killed.
type recentKills struct {
	// any is set once a conversation was killed: until then, has answers
	// every outside message without a lock.
	any   atomic.Bool
	mu    sync.RWMutex
	convs map[string]string // guarded by mu; every remembered thread → its conversation
	order []killedThreads   // guarded by mu; oldest first
}

// killedThreads is a killed conversation and the threads it had.
type killedThreads struct {
	conv    string
	threads []string
}

// add remembers conv and its threads (conv itself need not be among
// them), forgetting the oldest conversation past killsRemembered.
func (k *recentKills) add(conv string, threads []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.convs == nil {
		k.convs = map[string]string{}
	}
	if _, ok := k.convs[conv]; ok {
		return
	}
	kt := killedThreads{conv: conv, threads: []string{conv}}
	k.convs[conv] = conv
	for _, t := range threads {
		if _, ok := k.convs[t]; !ok {
			k.convs[t] = conv
			kt.threads = append(kt.threads, t)
		}
	}
	k.any.Store(true)
	k.order = append(k.order, kt)
	if len(k.order) > killsRemembered {
		for _, t := range k.order[0].threads {
			delete(k.convs, t)
		}
		k.order = k.order[1:]
	}
}

// has reports whether conv is remembered as a killed conversation.
func (k *recentKills) has(conv string) bool {
	c, ok := k.conversationOf(conv)
	return ok && c == conv
}

// conversationOf returns the killed conversation thread belonged to, when
// it is remembered.
func (k *recentKills) conversationOf(thread string) (string, bool) {
	if !k.any.Load() {
		return "", false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	conv, ok := k.convs[thread]
	return conv, ok
}

// killBookOf returns where a pump built with opts records kills.
func killBookOf(opts Options) KillJournal {
	if opts.Kills != nil {
		return opts.Kills
	}
	kj, _ := opts.Journal.(KillJournal)
	return kj
}

// recordKill records durably, with a KillJournal, that conv was killed.
func (p *Pump) recordKill(conv string) error {
	if kj := p.killBook; kj != nil {
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
	if kj := p.killBook; kj != nil {
		return kj.Killed(conv)
	}
	return false, nil
}

// refuseKilled returns the *failure.Failure wrapping ErrContinueKilled of
// an outside message on thread when thread's conversation was killed (nil
// otherwise); thread may be any thread of it. A live thread belongs to a
// conversation that runs, unless Kill is ending it now; a thread its
// sender just minted (FreshThread) belongs to none, so neither asks the
// journal.
func (p *Pump) refuseKilled(w *work, thread string) error {
	conv := p.threads.Root(thread)
	var killed bool
	if conv != "" {
		killed = p.kills.has(conv)
	} else {
		conv, killed = p.kills.conversationOf(thread)
		if !killed && (w.principal == nil || !w.principal.FreshThread) {
			var err error
			if conv, killed, err = p.journalKilledThread(thread); err != nil {
				p.log.Error("killed conversations lookup failed: refusing the message", "thread", thread, "error", err)
				return &failure.Failure{Stage: failure.StageThread, Err: fmt.Errorf("%w: %w", failure.ErrHandler, err)}
			}
		}
	}
	if !killed {
		return nil
	}
	return continueKilled(conv)
}

// continueKilled is the failure of an outside message continuing the
// killed conversation conv.
func continueKilled(conv string) error {
	return &failure.Failure{Stage: failure.StageThread, Err: ErrContinueKilled,
		Diagnostics: []failure.Diagnostic{{Stage: failure.StageThread, Msg: "conversation " + conv + " was killed"}}}
}

// journalKilledThread asks the journal whether the conversation thread (not
// live, not remembered in memory) belonged to was killed: by the thread's
// conversation with a ThreadKillJournal, else taking thread for the
// conversation id.
func (p *Pump) journalKilledThread(thread string) (string, bool, error) {
	if tj, ok := p.killBook.(ThreadKillJournal); ok {
		return tj.KilledThread(thread)
	}
	if kj := p.killBook; kj != nil {
		killed, err := kj.Killed(thread)
		if killed {
			return thread, true, err
		}
		return "", false, err
	}
	return "", false, nil
}

// killedMeanwhile returns the failure of an outside message on thread,
// joined as conversation conv (created: a conversation begun by it),
// whose conversation was killed after refuseKilled let it in — while it
// waited for room at a full listener (roomAt), say: the kill ended the
// thread, and joining it began a new conversation under a killed one's
// thread id, which would run. Such a conversation is ended again. It
// returns nil when no kill got in between.
func (p *Pump) killedMeanwhile(thread, conv string, created bool) error {
	if !p.kills.any.Load() {
		return nil
	}
	killed := p.kills.has(conv)
	if created && !killed {
		conv, killed = p.kills.conversationOf(thread)
	}
	if !killed {
		return nil
	}
	if created {
		if err := p.threads.End(thread); err != nil && !errors.Is(err, registry.ErrUnknownThread) {
			p.log.Warn("end thread", "thread", thread, "error", err)
		}
	}
	return continueKilled(conv)
}

// newConvState returns the state of conversation conv coming in flight
// (again). A conversation killed earlier in this run comes back killed: a
// message of it that got past the checks while the kill ran (joined its
// thread before the kill ended it, and reached its listener after the
// kill swept the queues and the conversation completed) is dropped as a
// dead letter, not handled (handle, enqueue).
func (p *Pump) newConvState(conv string) *convState {
	c := &convState{}
	if p.kills.has(conv) {
		c.killed = true
		p.killing.Add(1)
	}
	return c
}
