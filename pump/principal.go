package pump

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
)

// Principal is the authenticated party behind an external message: the
// identity its session sends as, and the user that session belongs to. A
// transport that authenticates its clients injects with InjectAs, so the
// pump — not the client — decides who a message is from and which
// conversations it may join.
type Principal struct {
	// From is the one <from> the session's messages may carry, kind:user
	// ("websocket:alice", "api:admin").
	From string
	// User is the authenticated user. A conversation begun by any of the
	// user's session identities is the user's own (see Owns).
	User string
	// FreshThread says the transport chose the message's thread id itself
	// (stage.NewThreadID), so it was never used before: the pump skips the
	// journal lookup of a thread id it does not hold (see ThreadHistory).
	// A transport must never set it for an id a client chose.
	FreshThread bool
	// Profile is the security profile of the conversations the principal
	// begins (a user's, a federation gateway's; see profile.go); "" for
	// none. A conversation it continues keeps its own profile, narrowed by
	// this one for its messages.
	Profile string
	// Hops is how many hops the conversation a message begins made before
	// it reached this organism: a federation gateway sets the chain depth
	// of the peer's caller, so that MaxChainDepth counts the hops of a
	// chain across organisms (a cycle between organisms is stopped like
	// one between listeners). A message that would begin a conversation
	// already at MaxChainDepth is refused (ErrChainTooDeep), a negative
	// count too; 0 for a conversation begun here. A message continuing a
	// live conversation keeps that one's count.
	Hops int
}

// ThreadHistory is an optional capability of a Journal: ThreadOrigin reports
// whether thread was ever journaled and, if so, the sender that began its
// conversation ("" when the journal does not say). The pump asks it about a
// thread id an authenticated session names that is not live any more, so an
// ended conversation cannot be reopened by another party under its old id.
type ThreadHistory interface {
	// ThreadOrigin looks thread up in the journal's past.
	ThreadOrigin(thread string) (origin string, seen bool, err error)
}

// sessionSources are the kinds of the session identities kind:user the
// organism's transports build: "api" (REST and the event stream),
// "console" (a /ws raw send) and "websocket" (a /ws target send and /bus).
var sessionSources = []string{"api", "console", "websocket"}

// Identity refusals. Both wrap failure.ErrForbiddenSender, so the sender is
// told the canned text of every refused sender (failure.HuhEnvelope).
var (
	// ErrForgedSender refuses a message whose <from> is not its session's
	// identity.
	ErrForgedSender = fmt.Errorf("%w: <from> is not the session's identity", failure.ErrForbiddenSender)
	// ErrForeignThread refuses a message naming a thread (live, or ended and
	// journaled) of a conversation another party began.
	ErrForeignThread = fmt.Errorf("%w: <thread> belongs to another party's conversation", failure.ErrForbiddenSender)
)

// Owns reports whether a conversation begun by origin is the principal's:
// origin is its identity, or another session identity of its user —
// api:User, console:User or websocket:User.
func (who Principal) Owns(origin string) bool {
	if origin == "" {
		return false // the conversation's sender is not known: no one's
	}
	if origin == who.From {
		return true
	}
	kind, user, ok := strings.Cut(origin, ":")
	return ok && who.User != "" && user == who.User && slices.Contains(sessionSources, kind)
}

// originUser is the user a conversation begun by origin belongs to: the
// user of a session identity kind:user, by the rule Owns applies; "" for
// any other origin (a listener, a federation peer, a console or script that
// vouches for no one).
func originUser(origin string) string {
	kind, user, ok := strings.Cut(origin, ":")
	if !ok || !slices.Contains(sessionSources, kind) {
		return ""
	}
	return user
}

// threadUser is the user whose conversation thread is part of (see
// xmlpipe.Metadata.User): read from the thread registry, which survives a
// restart, so a recovered message keeps its user.
func (p *Pump) threadUser(thread string) string {
	origin, _ := p.threads.Origin(thread)
	return originUser(origin)
}

// InjectAs is InjectWait for a message sent by an authenticated session. After
// the envelope is read, and before it joins a thread or is journaled, the pump
// refuses it (a *failure.Failure wrapping ErrForgedSender or ErrForeignThread,
// with a <huh> to out) when its <from> is not who.From, or when its <thread>
// is a thread of a conversation who does not own: a live one the registry
// knows, or an ended one the journal knows (ThreadHistory). A
// refusal is logged as a security event and journaled only as a <huh> from
// who.From on no thread: never under the claimed sender, never on the named
// thread, which stays untouched. A thread id the organism does not hold
// begins a new conversation, as for Inject.
func (p *Pump) InjectAs(ctx context.Context, raw []byte, out Outlet, who Principal) (string, error) {
	if who.From == "" {
		return "", fmt.Errorf("pump: inject as: %w: empty principal", failure.ErrForbiddenSender)
	}
	return p.InjectWait(context.WithValue(ctx, principalKey{}, &who), raw, out)
}

// principalKey carries InjectAs's principal to the work it admits.
type principalKey struct{}

// principalOf is the principal InjectAs put in ctx (nil: none).
func principalOf(ctx context.Context) *Principal {
	who, _ := ctx.Value(principalKey{}).(*Principal)
	return who
}

// checkThread reports whether who may send on thread: nil for a thread of a
// conversation who owns (one its user began, whose threads include those
// handed back to it in replies) and for a thread id never used (a new
// conversation); ErrForeignThread otherwise, and when the journal cannot say
// (fail closed). A thread that is not live is its conversation's when the
// registry remembers it ended in one that still runs (EndedRoot), else it
// is looked up in the journal, then among the histories kept for
// continuation (keptOrigin).
func (p *Pump) checkThread(who Principal, thread string) error {
	origin, seen, err := p.threadOrigin(thread, who.FreshThread)
	if err != nil {
		p.log.Error("thread history lookup failed: refusing the thread", "thread", thread, "error", err)
		return ErrForeignThread
	}
	if seen && !who.Owns(origin) {
		return ErrForeignThread
	}
	return nil
}

// threadOrigin is the sender that began the conversation of thread, and
// whether the organism knows the thread at all, looked up as checkThread
// decides: the live registry, the conversation an ended inner thread
// belonged to (EndedRoot), the journal (ThreadHistory), the kept
// histories (keptOrigin). fresh skips all but the live registry (see
// Principal.FreshThread).
func (p *Pump) threadOrigin(thread string, fresh bool) (origin string, seen bool, err error) {
	origin, seen = p.threads.Origin(thread)
	if seen || fresh {
		return origin, seen, nil
	}
	if root, ok := p.threads.EndedRoot(thread); ok && root != thread {
		if origin, seen = p.threads.Origin(root); seen {
			return origin, true, nil
		}
	}
	if h, ok := p.journal.(ThreadHistory); ok {
		if origin, seen, err = h.ThreadOrigin(thread); err != nil || seen {
			return origin, seen, err
		}
	}
	origin, seen = p.keptOrigin(thread)
	return origin, seen, nil
}

// ThreadOwner is the user who began the conversation thread belongs to —
// the user whose sessions CheckThread lets send on it (see Principal.Owns):
// "alice" for a conversation begun as api:alice, console:alice or
// websocket:alice; "" for one begun by anyone else (a listener, a
// federation peer, a console or script that vouches for no one) and for a
// thread the organism does not know. The error is the journal's when it
// could not be read.
func (p *Pump) ThreadOwner(thread string) (string, error) {
	origin, _, err := p.threadOrigin(thread, false)
	if err != nil {
		return "", fmt.Errorf("pump: thread owner %s: %w", thread, err)
	}
	return originUser(origin), nil
}

// checkPrincipal is the identity check of an external message sent as who.
func (p *Pump) checkPrincipal(who Principal, m *stage.Inbound) error {
	if m.From != who.From {
		return ErrForgedSender
	}
	return p.checkThread(who, m.Thread)
}

// refuseImpostor refuses external work whose envelope claims a sender or a
// thread its principal may not use, and reports whether it did. The refusal
// names neither the claimed sender nor the claimed thread anywhere but the
// security log: the journal's <huh> record and the event carry the
// principal's identity and no thread.
func (p *Pump) refuseImpostor(w *work, m *stage.Inbound) bool {
	who := w.principal
	if who == nil {
		return false
	}
	err := p.checkPrincipal(*who, m)
	if err == nil {
		return false
	}
	p.failed.Add(1)
	p.log.Warn("security event: message refused: sender or thread not the session's", "security", true,
		"user", who.User, "identity", who.From, "claimed_from", m.From, "claimed_thread", m.Thread, "error", err)
	diags := []failure.Diagnostic{{Stage: failure.StageExtract, Msg: err.Error()}}
	now := p.opts.Clock()
	p.record(Record{Time: now, Direction: Inbound, Kind: RecordHuh, From: who.From, Diagnostics: diags})
	huh := stage.NewHuh(err, w.raw)
	ev := Event{Kind: EventHuh, Time: now, From: "core", To: who.From, Error: huh.Error, Payload: huh,
		Diagnostics: diagStrings(diags), Cause: err}
	p.publish(w.outlet, ev)
	if w.done != nil {
		w.done("", 0, &failure.Failure{Stage: failure.StageExtract, Err: err, Diagnostics: diags})
	}
	return true
}
