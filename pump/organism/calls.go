package organism

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// Call is one LLM call — one attempt of an agent's model call at one
// backend, completed or failed — as the organism records it (the Router's
// llm.CallRecord, placed in its conversation).
type Call struct {
	// ID numbers the organism's calls: the store's call id for a durable
	// organism (the llm_calls table), else a count since assembly.
	ID int64
	// Time is when the attempt began.
	Time time.Time
	// Conversation and Thread are where the agent worked; Agent is its name.
	Conversation, Thread, Agent string
	// Backend and Model say who answered (the model asked for when the
	// call failed).
	Backend, Model string
	// Attempt numbers the attempts of one model call from 1.
	Attempt int
	// PromptTokens and CompletionTokens are the call's usage: of a failed
	// or aborted call, the estimate of what it spent when the model had
	// begun to stream its reply, else 0.
	PromptTokens, CompletionTokens int
	// UsageEstimated says PromptTokens and CompletionTokens are an
	// estimate (4 bytes a token): the backend reported no usage, or the
	// call failed or was aborted mid-stream.
	UsageEstimated bool
	// Wait is the time spent waiting for the backend's limits; FirstToken
	// the time to the first streamed piece (0: none); Duration the whole
	// attempt, Wait included.
	Wait, FirstToken, Duration time.Duration
	// Streamed says the call asked for a stream.
	Streamed bool
	// FinishReason is why the model stopped: FinishAborted for a call its
	// caller stopped, "" for a failed call.
	FinishReason string
	// ToolCalls is how many tool calls the reply made.
	ToolCalls int
	// Error is why the call failed ("" when it succeeded).
	Error string
	// EnvelopeSeq is the journal seq of the envelope the call produced (0
	// when not known: an in-memory organism, a call whose turn sent
	// nothing). The link rule: a call is linked to the first message its
	// agent sends in its conversation after the call — the answer, or the
	// message to a peer or tool its reply made; every attempt before it
	// that is still unlinked gets the same link.
	EnvelopeSeq int64
}

// FinishAborted is the FinishReason of a call its caller stopped — an
// operator's halt, cancel or kill, a reload, shutdown — rather than the
// backend failing it (its Error says how).
const FinishAborted = "aborted"

// Outcomes of a call (Call.Outcome).
const (
	// OutcomeCompleted is a call the model answered.
	OutcomeCompleted = "completed"
	// OutcomeAborted is a call its caller stopped (FinishAborted).
	OutcomeAborted = "aborted"
	// OutcomeFailed is a call the backend failed.
	OutcomeFailed = "failed"
)

// Outcome is how the call ended: OutcomeCompleted, OutcomeAborted or
// OutcomeFailed.
func (c Call) Outcome() string {
	switch {
	case c.FinishReason == FinishAborted:
		return OutcomeAborted
	case c.Error != "":
		return OutcomeFailed
	}
	return OutcomeCompleted
}

// Limits of the call book.
const (
	// recentCalls is how many calls are kept in memory (Calls of an
	// in-memory organism; /usage).
	recentCalls = 256
	// maxPendingLinks bounds the (agent, conversation) pairs whose calls
	// wait for their envelope; the oldest are given up first.
	maxPendingLinks = 4096
)

// linkKey names the calls that wait for their agent's next envelope in a
// conversation.
type linkKey struct{ agent, conv string }

// callBook records the organism's LLM calls: in the store (durable), in a
// ring of the recent ones, to subscribers (metrics), and links each to the
// envelope its agent sends next in its conversation. Its observe is the
// Routers' OnCall; its journaled is told by the store journal of every
// message a listener emits.
type callBook struct {
	store *store.Store // nil in memory
	log   *slog.Logger
	// threads places a call in its conversation (set before the pump starts).
	threads *registry.Threads

	mu sync.Mutex
	// ring holds the newest calls, at most recentCalls: the oldest at
	// ring[head] once it is full.
	ring    []Call
	head    int
	next    int64
	subs    map[int]func(Call)
	nextSub int
	pending map[linkKey][]int64
	order   []linkKey // pending keys, oldest first
	// npending is len(pending), read without mu: the journal skips the
	// lookup while no call waits.
	npending atomic.Int32
}

func newCallBook(s *store.Store, log *slog.Logger) *callBook {
	if log == nil {
		log = slog.Default()
	}
	return &callBook{store: s, log: log, subs: map[int]func(Call){}, pending: map[linkKey][]int64{}}
}

// observe records one call attempt; it is the Routers' OnCall, run on the
// agent's goroutine right after the attempt.
func (b *callBook) observe(rec llm.CallRecord) {
	conv := rec.Thread
	if b.threads != nil && rec.Thread != "" {
		if root := b.threads.Root(rec.Thread); root != "" {
			conv = root
		}
	}
	c := Call{Time: rec.Start, Conversation: conv, Thread: rec.Thread, Agent: rec.Agent, Backend: rec.Backend,
		Model: rec.Model, Attempt: rec.Attempt, PromptTokens: rec.Usage.PromptTokens,
		CompletionTokens: rec.Usage.CompletionTokens, UsageEstimated: rec.UsageEstimated, Wait: rec.Wait, FirstToken: rec.FirstToken, Duration: rec.Duration,
		Streamed: rec.Streamed, FinishReason: string(rec.FinishReason), ToolCalls: rec.ToolCalls}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	if rec.Err != nil {
		c.Error = rec.Err.Error()
	}
	if rec.Aborted {
		c.FinishReason = FinishAborted
	}
	if b.store != nil {
		id, err := b.store.AppendCall(callRow(c))
		switch {
		case errors.Is(err, store.ErrClosed):
			// An agent the pump abandoned at shutdown ended its call after
			// the organism closed its store: nothing is lost that a
			// running organism would keep, and nothing is wrong.
			b.log.Debug("llm call not journaled: the store closed at shutdown before the abandoned agent's call ended",
				"agent", c.Agent, "thread", c.Thread, "backend", c.Backend)
		case err != nil:
			b.log.Error("llm call not journaled", "agent", c.Agent, "thread", c.Thread, "backend", c.Backend, "error", err)
		}
		c.ID = id
	}
	b.mu.Lock()
	if b.store == nil {
		b.next++
		c.ID = b.next
	}
	if len(b.ring) < recentCalls {
		b.ring = append(b.ring, c)
	} else {
		b.ring[b.head] = c
		b.head = (b.head + 1) % recentCalls
	}
	if b.store != nil && c.ID > 0 && c.Agent != "" && conv != "" {
		k := linkKey{c.Agent, conv}
		if _, ok := b.pending[k]; !ok {
			b.order = append(b.order, k)
			if len(b.order) > maxPendingLinks {
				delete(b.pending, b.order[0])
				b.order = b.order[1:]
			}
		}
		b.pending[k] = append(b.pending[k], c.ID)
		b.npending.Store(int32(len(b.pending)))
	}
	subs := make([]func(Call), 0, len(b.subs))
	for _, fn := range b.subs {
		subs = append(subs, fn)
	}
	b.mu.Unlock()
	for _, fn := range subs {
		fn(c)
	}
}

// journaled links the calls waiting for agent's next envelope in conv to
// seq, the journal seq of a message agent just emitted there.
func (b *callBook) journaled(agent, conv string, seq int64) {
	if b == nil || b.npending.Load() == 0 || seq <= 0 {
		return
	}
	k := linkKey{agent, conv}
	b.mu.Lock()
	ids, ok := b.pending[k]
	if ok {
		delete(b.pending, k)
		b.order = slices.DeleteFunc(b.order, func(x linkKey) bool { return x == k })
		b.npending.Store(int32(len(b.pending)))
		for i := range b.ring {
			if b.ring[i].EnvelopeSeq == 0 && slices.Contains(ids, b.ring[i].ID) {
				b.ring[i].EnvelopeSeq = seq
			}
		}
	}
	b.mu.Unlock()
	if !ok {
		return
	}
	if err := b.store.LinkCalls(ids, seq); err != nil {
		b.log.Error("llm calls not linked to their envelope", "agent", agent, "seq", seq, "error", err)
	}
}

// subscribe calls fn for every call recorded from now on until cancel.
func (b *callBook) subscribe(fn func(Call)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.nextSub
	b.nextSub++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}
}

// recent returns the newest limit calls kept in memory of the conversation
// or thread (every call for ""), oldest first.
func (b *callBook) recent(thread string, limit int) []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Call
	for k := len(b.ring) - 1; k >= 0 && len(out) < limit; k-- {
		if c := b.ring[(b.head+k)%len(b.ring)]; thread == "" || c.Conversation == thread || c.Thread == thread {
			out = append(out, c)
		}
	}
	slices.Reverse(out)
	return out
}

// callRow is the store's form of c.
func callRow(c Call) store.CallRow {
	return store.CallRow{ID: c.ID, Time: c.Time, Conversation: c.Conversation, Thread: c.Thread, Agent: c.Agent,
		Backend: c.Backend, Model: c.Model, Attempt: c.Attempt, PromptTokens: c.PromptTokens,
		CompletionTokens: c.CompletionTokens, Wait: c.Wait, FirstToken: c.FirstToken, Duration: c.Duration,
		Streamed: c.Streamed, FinishReason: c.FinishReason, ToolCalls: c.ToolCalls, Error: c.Error,
		EnvelopeSeq: c.EnvelopeSeq, UsageEstimated: c.UsageEstimated}
}

// callOf is the organism's form of a stored call.
func callOf(r store.CallRow) Call {
	return Call{ID: r.ID, Time: r.Time, Conversation: r.Conversation, Thread: r.Thread, Agent: r.Agent,
		Backend: r.Backend, Model: r.Model, Attempt: r.Attempt, PromptTokens: r.PromptTokens,
		CompletionTokens: r.CompletionTokens, Wait: r.Wait, FirstToken: r.FirstToken, Duration: r.Duration,
		Streamed: r.Streamed, FinishReason: r.FinishReason, ToolCalls: r.ToolCalls, Error: r.Error,
		EnvelopeSeq: r.EnvelopeSeq, UsageEstimated: r.UsageEstimated}
}

// DefaultCallLimit is how many calls Calls returns when asked for none or
// fewer than one.
const DefaultCallLimit = 20

// Calls returns the newest LLM calls of the conversation or thread named
// (every call when thread is ""), at most limit (DefaultCallLimit when
// limit < 1; the store reads at most 1000), oldest first: from the
// journal's llm_calls table for a durable organism — calls from before a
// restart too — else from the last 256 kept in memory.
func (o *Organism) Calls(thread string, limit int) ([]Call, error) {
	if limit < 1 {
		limit = DefaultCallLimit
	}
	if s := o.Store(); s != nil {
		rows, err := s.Calls(store.CallFilter{Thread: thread, Limit: limit})
		if err != nil {
			return nil, err
		}
		out := make([]Call, len(rows))
		for i, r := range rows {
			out[i] = callOf(r)
		}
		return out, nil
	}
	return o.calls.recent(thread, limit), nil
}

// OnCall calls fn for every LLM call the organism's agents make from now on
// (after it is recorded), on the agent's goroutine: fn must be quick. The
// returned cancel stops it.
func (o *Organism) OnCall(fn func(Call)) (cancel func()) { return o.calls.subscribe(fn) }
