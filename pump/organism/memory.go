package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/memory"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// KindMemory is the kind of approval a remember request waits in under
// memory consent ask: approved, the memory is stored; denied or timed out,
// the agent is told so and nothing is stored.
const KindMemory = "memory"

// memoryLaw is the organism's side of the agents' memory (package
// listeners/memory): the consent policy of each agent with memory, the gate
// that holds, refuses or lets through what they ask to remember, the memory
// listener, and where the memories are kept.
type memoryLaw struct {
	g   *Governance
	svc *memory.Service
	log *slog.Logger
	// store is the organism's store (nil for an in-memory organism, which
	// opens a private one on first use: own).
	store *store.Store
	own   privateStore
	// policies are the consent policies of the agents with memory, by
	// lower-cased name; maxBytes is memory.max_bytes.
	policies atomic.Pointer[map[string]memory.Consent]
	maxBytes atomic.Int64
	// listening reports that the memory listener is registered (at
	// assembly, when an agent had memory).
	listening bool
}

// privateStore is the memory store of an organism without a data
// directory: a store in a temporary directory, opened on first use and
// removed at shutdown.
type privateStore struct {
	mu     sync.Mutex
	s      *store.Store
	dir    string
	closed bool
}

func newMemoryLaw(g *Governance, s *store.Store, opts Options) *memoryLaw {
	m := &memoryLaw{g: g, store: s, log: opts.Logger}
	m.svc = &memory.Service{
		Book:         func(ctx context.Context) (memory.Book, error) { return m.book(ctx) },
		Policy:       m.policy,
		Approved:     m.approved,
		Refused:      m.refused,
		MaxBytes:     func() int { return int(m.maxBytes.Load()) },
		Conversation: func(thread string) string { return g.pump.Threads().Root(thread) },
		Clock:        opts.Clock,
		Logger:       opts.Logger,
	}
	empty := map[string]memory.Consent{}
	m.policies.Store(&empty)
	return m
}

// configure reads the agents' memory and the policy of cfg.
func (m *memoryLaw) configure(cfg *config.Organism) {
	p := map[string]memory.Consent{}
	for _, lc := range cfg.Listeners {
		if c, ok := cfg.MemoryConsent(lc); ok && lc.Agent {
			p[strings.ToLower(lc.Name)] = memory.Consent(c)
		}
	}
	m.policies.Store(&p)
	m.maxBytes.Store(int64(cfg.MemoryBytes()))
}

// any reports whether some agent has memory (the gate must then run).
func (m *memoryLaw) any() bool { return len(*m.policies.Load()) > 0 }

// policy is the consent policy of agent (false: it has no memory).
func (m *memoryLaw) policy(agent string) (memory.Consent, bool) {
	c, ok := (*m.policies.Load())[strings.ToLower(agent)]
	return c, ok
}

// register registers the memory listener when an agent of cfg has memory.
func (m *memoryLaw) register(p *pump.Pump, cfg *config.Organism) error {
	needed := false
	for _, lc := range cfg.Listeners {
		if _, ok := cfg.MemoryConsent(lc); ok && lc.Agent {
			needed = true
		}
	}
	if !needed {
		return nil
	}
	err := p.RegisterSystem(pump.Listener{Name: memory.ListenerName, Payload: memory.RememberType(),
		Description: "Stores what agents with memory were allowed to remember",
		Handler:     xmlpipe.Typed(m.svc.Handle)})
	if err != nil {
		return fmt.Errorf("organism: memory listener: %w", err)
	}
	m.listening = true
	return nil
}

// checkReload refuses a configuration that gives an agent memory when the
// organism started without the memory listener.
func (m *memoryLaw) checkReload(cfg *config.Organism) error {
	if m.listening {
		return nil
	}
	for i, lc := range cfg.Listeners {
		if _, ok := cfg.MemoryConsent(lc); ok && lc.Agent {
			return fmt.Errorf("%s: listener %s: memory applies only at the next start of an organism that started "+
				"without agents with memory", cfg.Pos(fmt.Sprintf("listeners[%d].memory", i)), lc.Name)
		}
	}
	return nil
}

// equip gives the agent listener l, configured as lc, its memory tools and
// the memory listener as a peer (reached through remember only).
func (m *memoryLaw) equip(l *pump.Listener, a *llm.Agent, cfg *config.Organism, lc config.Listener) {
	if _, ok := cfg.MemoryConsent(lc); !ok || !m.listening {
		return
	}
	a.LocalTools = append(a.LocalTools, m.svc.Tools()...)
	l.Peers = append(l.Peers, memory.ListenerName)
}

// gate decides about a message to the memory listener (ok false: it is
// not one): only an agent with memory may send one, prohibited content is
// refused, and the agent's consent policy decides — never refuses, always
// delivers, ask holds it for a human (an approval of kind memory).
func (m *memoryLaw) gate(msg *pump.GateMessage) (pump.GateDecision, bool) {
	if !strings.EqualFold(msg.Target, memory.ListenerName) {
		return pump.GateDecision{}, false
	}
	policy, ok := m.policy(msg.From)
	if !ok || !msg.FromAgent {
		return m.refuse(msg, "only agents with memory may store memories", "", stage.SeverityMedium), true
	}
	p, err := memory.RememberType().Decode(msg.Payload)
	if err != nil {
		return m.refuse(msg, "the memory request could not be read", "", stage.SeverityLow), true
	}
	r := p.(*memory.Remember)
	if f, bad := memory.Prohibited(r.Content + "\n" + strings.Join(r.Tags, " ")); bad {
		return m.refuse(msg, "memory law: "+f.Reason+"; secrets are never stored",
			"Remember it without the secret", stage.SeverityHigh), true
	}
	switch policy {
	case memory.ConsentAlways:
		return pump.GateDecision{}, true
	case memory.ConsentAsk:
		return m.g.hold(msg, KindMemory, fmt.Sprintf("%s asks to remember this for %s (memory consent: ask)", msg.From,
			spaceName(msg.User)), nil, "", ""), true
	}
	return m.refuse(msg, "memory consent policy is never: nothing is stored", "", stage.SeverityLow), true
}

// refuse refuses msg for the memory law, audited.
func (m *memoryLaw) refuse(msg *pump.GateMessage, reason, suggestion, severity string) pump.GateDecision {
	m.g.decided(msg, "deny", "memory-law", []string{"memory-law"}, reason, "")
	return pump.GateDecision{Verdict: pump.GateRefuse,
		Refusal: stage.NewRefusal(reason, suggestion, severity, "memory-law")}
}

// refused audits a remember call the tool refused for its content (nothing
// was sent).
func (m *memoryLaw) refused(r memory.Refusal) {
	m.g.audit("", r.Thread, r.Agent, memory.ListenerName, "deny", "memory-law", []string{"memory-law"},
		"memory law: "+r.Finding.Reason+" ("+r.Finding.Kind+"); secrets are never stored", "", 0)
}

// approved finds the human decision that released the Remember message
// delivered on thread: an approved approval of kind memory (or review: a
// human let that very message through).
func (m *memoryLaw) approved(ctx context.Context, thread string) (memory.Approval, bool, error) {
	as, err := m.g.book.list(ctx, ApprovalFilter{Status: StatusApproved, Thread: thread})
	if err != nil {
		return memory.Approval{}, false, err
	}
	for _, a := range as {
		if a.Thread == thread && (a.Kind == KindMemory || a.Kind == KindReview) {
			return memory.Approval{ID: a.ID, DecidedBy: a.DecidedBy, Conversation: a.Conversation}, true, nil
		}
	}
	return memory.Approval{}, false, nil
}

// book returns where memories are kept.
func (m *memoryLaw) book(context.Context) (*store.Store, error) {
	if m.store != nil {
		return m.store, nil
	}
	return m.own.open(m.log)
}

// open opens the private store on first use.
func (p *privateStore) open(log *slog.Logger) (*store.Store, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, store.ErrClosed
	case p.s != nil:
		return p.s, nil
	}
	dir, err := os.MkdirTemp("", "xmlpipe-memory-")
	if err != nil {
		return nil, fmt.Errorf("organism: memory store: %w", err)
	}
	s, err := store.Open(dir, store.Options{Logger: log})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("organism: memory store: %w", err), os.RemoveAll(dir))
	}
	p.s, p.dir = s, dir
	return s, nil
}

// close closes and removes the private store, if one was opened.
func (p *privateStore) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.s == nil {
		return nil
	}
	err := p.s.Close()
	p.s = nil
	return errors.Join(err, os.RemoveAll(p.dir))
}

// spaceName names whose memory space user is, for people.
func spaceName(user string) string {
	if user == "" {
		return "the organism's own traffic"
	}
	return "user " + user
}

// Memory is one consented memory.
type Memory struct {
	// ID names it (DELETE /api/v1/memory/{id}).
	ID string
	// User is whose it is ("" for the organism's own traffic).
	User string
	// Agent is the agent that asked to remember it.
	Agent string
	// Content and Tags are what is remembered.
	Content string
	Tags    []string
	// Consent is the approval that allowed it (or policy:always).
	Consent string
	// Conversation and Thread are where it was asked for.
	Conversation, Thread string
	// CreatedAt is when it was stored.
	CreatedAt time.Time
}

// Memory errors.
var (
	// ErrMemoryNotFound: no memory has that id (or it is another user's).
	ErrMemoryNotFound = errors.New("organism: no such memory")
)

// MemoryFilter selects memories.
type MemoryFilter struct {
	// User selects one user's memories ("": the organism's own); AllUsers
	// selects everyone's.
	User     string
	AllUsers bool
	// Query, when it holds words, keeps the memories that hold any of
	// them, best first.
	Query string
	// Limit caps the result (0: DefaultMemoryLimit).
	Limit int
}

// DefaultMemoryLimit is how many memories a list returns unless asked for
// another number.
const DefaultMemoryLimit = 500

// Memories lists consented memories, newest first (best first with a
// query).
func (o *Organism) Memories(ctx context.Context, f MemoryFilter) ([]Memory, error) {
	b, err := o.gov.mem.book(ctx)
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	rows, err := b.Memories(ctx, store.MemoryQuery{User: f.User, AnyUser: f.AllUsers, Text: f.Query, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]Memory, len(rows))
	for i, r := range rows {
		out[i] = memoryOf(r)
	}
	return out, nil
}

// ForgetMemory deletes the memory id on behalf of by: the memory's owner
// (user), or anyone when admin. Another user's memory is
// ErrMemoryNotFound, as is an unknown id. The deletion is audited.
func (o *Organism) ForgetMemory(ctx context.Context, id, user string, admin bool, by string) (Memory, error) {
	b, err := o.gov.mem.book(ctx)
	if err != nil {
		return Memory{}, err
	}
	rows, err := b.Memories(ctx, store.MemoryQuery{AnyUser: true, ID: id, Limit: 1})
	if err != nil {
		return Memory{}, err
	}
	if len(rows) == 0 || (!admin && rows[0].User != user) {
		return Memory{}, fmt.Errorf("%w: %s", ErrMemoryNotFound, id)
	}
	if err := b.DeleteMemory(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Memory{}, fmt.Errorf("%w: %s", ErrMemoryNotFound, id)
		}
		return Memory{}, err
	}
	o.gov.audit(rows[0].Conversation, rows[0].Thread, by, memory.ListenerName, "forget", by, nil, "memory "+id+" deleted",
		"", 0)
	return memoryOf(rows[0]), nil
}

func memoryOf(r store.MemoryRow) Memory {
	return Memory{ID: r.ID, User: r.User, Agent: r.Agent, Content: r.Content, Tags: r.Tags, Consent: r.Consent,
		Conversation: r.Conversation, Thread: r.Thread, CreatedAt: r.CreatedAt}
}
