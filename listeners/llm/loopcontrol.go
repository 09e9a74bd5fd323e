package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// AEIOU v3 loop control (Agent.LoopControl, shared/seeds/002). An agent
// turn — from its caller's message to its answer — is a loop of AEIOU
// turns. Each AEIOU turn opens with a fresh turn index and nonce; the model
// is offered the native tool aeiou_magic (aeiou.ToolName), which mints a
// token bound to the open turn, and the rules (aeiou.Rules) in its system
// prompt. When the model answers in text, the answer is decided
// (aeiou.Session.Decide: the last valid token, abort > done > continue;
// forged, altered, replayed, expired and quoted tokens are ignored and
// counted; the §9 progress guard over the answer and the turn's tool
// results), and the decision is mapped onto the loop:
//
//   - continue: the answer is kept in the conversation and shown as the
//     agent's interim text (OnInterim), a short note asks the model to go
//     on, a new AEIOU turn opens and the model is asked again;
//   - done: the answer, its token lines stripped, goes to the caller;
//   - abort: the turn halts; the caller gets the reason and the answer;
//   - no valid token (HALT(ERR_TOKEN_MISSING)): the answer, stripped, goes
//     to the caller as final — the library's recommended mapping — while
//     the decision is logged and counted as a halt; but when a token in
//     it was only misplaced (written within a line of text, not alone on
//     its line as §5.3 and §6.2 require), the model is told so in a note
//     and asked again in a new AEIOU turn, at most maxMisplacedNotes times
//     per agent turn; so is a model whose token no longer verifies for its
//     key (minted before a restart: the keys are fresh at every start) or
//     its time (expired);
//   - the progress guard (HALT(ERR_NO_PROGRESS)) halts the turn like an
//     abort, and so does a magic tool that can mint nothing
//     (ERR_MAGIC_TOOL_INTERNAL).
//
// The AEIOU sessions live in memory (a token only ever verifies within its
// own turn, and the keys live as long as the process): after a restart a
// conversation's next model call opens a new session.

// maxLoopSessions bounds the AEIOU sessions one agent keeps (one per
// conversation in a turn); beyond it the oldest is dropped.
const maxLoopSessions = 4096

// loopContinueNote is what the model reads after a continue.
const loopContinueNote = "[loop control] You chose continue (turn %d). Go on with the task; end your answer with a " +
	"new token from " + aeiou.ToolName + ": done when it is complete, abort if it cannot or must not go on."

// maxMisplacedNotes bounds how often, in one agent turn, a model whose token
// was not alone on its line is told so and asked again; past it the answer
// is delivered as final like any answer without a valid token.
const maxMisplacedNotes = 1

// loopMisplacedNote is what the model reads after writing its token within
// a line of text.
const loopMisplacedNote = "[loop control] Your token on line %d was ignored: it was not alone on its line. A token " +
	"counts only when written verbatim, alone on the last line of the answer. Call " + aeiou.ToolName +
	" again (turn %d) and end your answer with the new token on a line of its own."

// loopStaleNote is what the model reads after ending its answer with a
// token that no longer verifies though nothing in it was forged: minted
// before the organism restarted (the keys are fresh at every start) or
// expired.
const loopStaleNote = "[loop control] Your token on line %d no longer counts: it was minted before the organism " +
	"restarted, or it expired. Call " + aeiou.ToolName + " again (turn %d) and end your answer with the new token on " +
	"a line of its own."

// loopSession is the AEIOU session of one conversation's agent turn.
type loopSession struct {
	// misplaced counts the notes given in this agent turn about a token
	// not alone on its line (at most maxMisplacedNotes); stale those about
	// a token that no longer verifies (at most maxMisplacedNotes too).
	misplaced, stale int
	s                *aeiou.Session
	// since is when the open AEIOU turn began, in the history's clock: the
	// tool results after it are the turn's scratch.
	since time.Time
	// internal is set when the magic tool could mint nothing: the loop
	// halts with ERR_MAGIC_TOOL_INTERNAL.
	internal error
}

// loopSessions are an agent's AEIOU sessions by session thread.
type loopSessions struct {
	mu sync.Mutex
	m  map[string]*loopSession
}

// open returns the session of thread with an open AEIOU turn, beginning one
// (and the session) when there is none.
func (l *loopSessions) open(h *aeiou.Host, thread string, since time.Time) (*loopSession, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.m[thread]
	if ls == nil {
		s, err := h.Session(thread)
		if err != nil {
			return nil, err
		}
		if l.m == nil {
			l.m = map[string]*loopSession{}
		}
		if len(l.m) >= maxLoopSessions {
			l.evictOldest()
		}
		ls = &loopSession{s: s}
		l.m[thread] = ls
	}
	if _, ok := ls.s.Turn(); !ok {
		if _, err := ls.s.Begin(); err != nil {
			return nil, err
		}
		ls.since = since
	}
	return ls, nil
}

// evictOldest drops the session whose turn began first (l.mu held).
func (l *loopSessions) evictOldest() {
	var oldest string
	var at time.Time
	for k, ls := range l.m {
		if oldest == "" || ls.since.Before(at) {
			oldest, at = k, ls.since
		}
	}
	delete(l.m, oldest)
}

// get returns the session of thread (nil: none).
func (l *loopSessions) get(thread string) *loopSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[thread]
}

// end drops the session of thread: its agent turn is over.
func (l *loopSessions) end(thread string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, thread)
}

// loopControlled reports whether the turn runs under AEIOU loop control.
func (a *Agent) loopControlled(st *turnState) bool {
	return a.LoopControl != nil && st.mode == NativeTools
}

// locals are the local tools offered: the agent's own, and aeiou_magic
// under loop control.
func (a *Agent) locals() []LocalTool {
	if a.LoopControl == nil {
		return a.LocalTools
	}
	return append(append([]LocalTool(nil), a.LocalTools...), LocalTool{
		Spec: ToolSpec{Name: aeiou.ToolName, Description: aeiou.ToolDescription,
			Parameters: []byte(aeiou.ToolParameters)},
		Call: a.magic,
	})
}

// magic answers an aeiou_magic call: the token minted for the open turn
// of the conversation, or why none was.
func (a *Agent) magic(_ context.Context, c LocalCall) (LocalResult, error) {
	ls := a.loops.get(c.Thread)
	if ls == nil {
		return LocalResult{}, errors.New("no loop-control turn is open in this conversation")
	}
	m, err := ls.s.Magic(c.Arguments)
	if errors.Is(err, aeiou.ErrMagicInternal) {
		ls.internal = err
	}
	if err != nil {
		return LocalResult{}, err
	}
	return LocalResult{Content: m.Token}, nil // a fallback abort token when the primary signer failed
}

// beginLoop makes sure the turn's AEIOU session has an open turn before the
// model is asked; a new message from the caller starts a new session.
func (a *Agent) beginLoop(st *turnState, fresh bool) (*loopSession, error) {
	if fresh {
		a.loops.end(st.session)
	}
	return a.loops.open(a.LoopControl, st.session, st.c.latest)
}

// handledAgain reports whether the caller's message handled now (payload)
// began the agent's latest turn and that turn's steps are recorded after
// it: the same message handled again — a halt held its handling while the
// model was asked, or a crash interrupted it — not a new one. Its AEIOU
// turn is still open then, and the token the model minted in it (in its
// history) must still verify: a new session would ignore it as a token of
// a turn that no longer exists, and an abort would be delivered as the
// answer.
func (a *Agent) handledAgain(st *turnState, payload any) bool {
	steps := false
	for i := len(st.c.items) - 1; i >= 0; i-- {
		switch it := st.c.items[i]; it.kind {
		case itemIncoming, itemAnswer, itemError:
			return steps && a.records(it.slot, payload, nil, st.md, st.seq)
		case itemOther:
		default:
			steps = true
		}
	}
	return false
}

// loopScratch is the private text of the open AEIOU turn for the progress
// digest: the results of the calls made since it began (the magic tool's
// tokens aside).
func (a *Agent) loopScratch(st *turnState, ls *loopSession) string {
	var b strings.Builder
	for _, it := range st.c.items {
		if it.kind == itemResult && it.result.Name != aeiou.ToolName && !it.slot.Time.Before(ls.since) {
			b.WriteString(it.result.Content)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// decideLoop applies loop control to the model's text answer: it returns
// the response that ends the agent turn, or again=true when the model is to
// be asked once more (continue).
func (a *Agent) decideLoop(ctx context.Context, st *turnState, ls *loopSession, answer string) (resp xmlpipe.Response,
	again bool, err error) {
	d := ls.s.Decide(ctx, answer, a.loopScratch(st, ls))
	text := aeiou.StripTokens(answer)
	switch d.Outcome {
	case aeiou.OutcomeContinue:
		t, err := ls.s.Begin()
		if err != nil {
			resp, err = a.halt(st, "loop control: "+err.Error())
			return resp, false, err
		}
		ls.since = st.c.latest
		if a.OnInterim != nil && strings.TrimSpace(text) != "" {
			a.OnInterim(a.Name, st.md.ThreadID, text)
		}
		a.record(st, registry.Slot{PayloadType: feedbackType, Raw: fmt.Appendf(nil, loopContinueNote, t.Index)})
		return nil, true, nil
	case aeiou.OutcomeDone:
		a.loops.end(st.session)
		return a.answer(st.md, text), false, nil
	case aeiou.OutcomeAbort:
		reason := "aborted by its loop control token"
		if d.Record.Reason == "fallback" {
			reason += " (minted by the fallback signer)"
		}
		if strings.TrimSpace(text) != "" {
			reason += ": " + text
		}
		resp, err = a.halt(st, reason)
		return resp, false, err
	case aeiou.OutcomeNoProgress:
		resp, err = a.halt(st, fmt.Sprintf("no progress (%s): the same output %d turns in a row", aeiou.ErrCodeNoProgress,
			d.Repeats))
		return resp, false, err
	}
	// No valid token: logged and counted as a halt (ERR_TOKEN_MISSING) by
	// Decide. A token only misplaced within a line is explained to the
	// model, which is asked again; otherwise the answer is final.
	if line := embeddedLine(d.Rejected); line > 0 && ls.misplaced < maxMisplacedNotes {
		t, err := ls.s.Begin()
		if err != nil {
			resp, err = a.halt(st, "loop control: "+err.Error())
			return resp, false, err
		}
		ls.misplaced++
		ls.since = st.c.latest
		a.logger().Info("agent's loop-control token was not alone on its line: told it and asked again",
			"agent", a.Name, "thread", st.md.ThreadID, "line", line)
		a.record(st, registry.Slot{PayloadType: feedbackType, Raw: fmt.Appendf(nil, loopMisplacedNote, line, t.Index)})
		return nil, true, nil
	}
	if line := staleLine(d.Rejected); line > 0 && ls.stale < maxMisplacedNotes {
		t, err := ls.s.Begin()
		if err != nil {
			resp, err = a.halt(st, "loop control: "+err.Error())
			return resp, false, err
		}
		ls.stale++
		ls.since = st.c.latest
		a.logger().Info("agent's loop-control token no longer verifies (minted before a restart, or expired): told it "+
			"and asked again", "agent", a.Name, "thread", st.md.ThreadID, "line", line)
		a.record(st, registry.Slot{PayloadType: feedbackType, Raw: fmt.Appendf(nil, loopStaleNote, line, t.Index)})
		return nil, true, nil
	}
	a.loops.end(st.session)
	a.logger().Warn("agent answered without a valid loop-control token: delivered as final", "agent", a.Name,
		"thread", st.md.ThreadID, "rejected", len(d.Rejected))
	return a.answer(st.md, text), false, nil
}

// staleLine is the line of the last token line of the answer rejected for
// no longer verifying — its key unknown (minted before a restart) or
// retired, or its time past — or 0.
func staleLine(rejected []aeiou.Candidate) int {
	for i := len(rejected) - 1; i >= 0; i-- {
		switch rejected[i].Reason {
		case aeiou.ReasonUnknownKey, aeiou.ReasonKeyRetired, aeiou.ReasonExpired:
			return rejected[i].Line
		}
	}
	return 0
}

// embeddedLine is the line of the last candidate rejected only for being
// written within a line of text (aeiou.ReasonEmbedded), or 0.
func embeddedLine(rejected []aeiou.Candidate) int {
	for i := len(rejected) - 1; i >= 0; i-- {
		if rejected[i].Reason == aeiou.ReasonEmbedded {
			return rejected[i].Line
		}
	}
	return 0
}
