package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// ListenerName is the organism's memory listener: remember sends there,
// and only what reaches it is stored.
const ListenerName = "system.memory"

// The tools' names.
const (
	RememberTool = "remember"
	RecallTool   = "recall"
)

// Consent is a memory consent policy.
type Consent string

// The policies.
const (
	// ConsentAsk: each memory waits for a human to approve it (an approval
	// of kind memory).
	ConsentAsk Consent = "ask"
	// ConsentAlways: memories are stored at once (the configuration is the
	// consent).
	ConsentAlways Consent = "always"
	// ConsentNever: nothing is stored.
	ConsentNever Consent = "never"
)

// PolicyAlways is the consent recorded for a memory stored under
// ConsentAlways.
const PolicyAlways = "policy:always"

// Limits.
const (
	// DefaultMaxBytes caps a memory's content unless configured.
	DefaultMaxBytes = 4 << 10
	// MaxTags and MaxTagBytes bound a memory's tags.
	MaxTags     = 16
	MaxTagBytes = 64
	// DefaultRecall and MaxRecall bound what recall returns.
	DefaultRecall = 5
	MaxRecall     = 20
)

// Errors of the memory listener (they reach the agent as the call's
// result).
var (
	// ErrNotAllowed: the sender is not an agent with memory.
	ErrNotAllowed = errors.New("memory: only agents with memory may store memories")
	// ErrNoConsent: no consent lets this memory in (policy never, or an
	// ask without an approved approval).
	ErrNoConsent = errors.New("memory: no consent to store this memory")
	// ErrProhibited: memory law forbids storing the content.
	ErrProhibited = errors.New("memory: prohibited content is never stored")
	// ErrContent: empty or too long content, bad tags.
	ErrContent = errors.New("memory: bad memory")
)

// Book keeps the memories (*store.Store is one).
type Book interface {
	PutMemory(ctx context.Context, m store.MemoryRow) error
	Memories(ctx context.Context, q store.MemoryQuery) ([]store.MemoryRow, error)
}

// Approval is the human decision that let a memory in.
type Approval struct {
	// ID names the approval; DecidedBy is who approved it.
	ID, DecidedBy string
	// Conversation is where it was asked for.
	Conversation string
}

// Refusal describes a remember request refused for its content, for the
// organism's audit.
type Refusal struct {
	Agent, User, Thread string
	Finding             Finding
}

// Service is the memory of an organism's agents: the remember and recall
// tools and the memory listener's handler. Its functions are set by the
// organism; Book, Policy and Approved are required.
type Service struct {
	// Book returns where memories are kept (the organism's store, opened
	// on first use for an organism without one).
	Book func(ctx context.Context) (Book, error)
	// Policy returns the consent policy of agent, and false when the agent
	// has no memory. It is read on every call, so a reload applies at once.
	Policy func(agent string) (Consent, bool)
	// Approved returns the approved approval of kind memory that released
	// the Remember message delivered on thread (false: none).
	Approved func(ctx context.Context, thread string) (Approval, bool, error)
	// Refused, when set, is told of every request refused for prohibited
	// content (the organism audits it).
	Refused func(Refusal)
	// Conversation, when set, names the conversation thread belongs to
	// (recorded with a memory stored under ConsentAlways, for its audit).
	Conversation func(thread string) string
	// MaxBytes caps a memory's content (0: DefaultMaxBytes).
	MaxBytes func() int
	// Clock is the time (nil: time.Now).
	Clock func() time.Time
	// Logger receives the log (nil: slog.Default()).
	Logger *slog.Logger
}

// Tools returns the remember and recall tools of an agent with memory.
func (s *Service) Tools() []llm.LocalTool {
	return []llm.LocalTool{
		{Spec: llm.ToolSpec{Name: RememberTool, Description: "Remember something for the user of this conversation, " +
			"beyond it. Depending on the organism's consent policy it is stored at once or only once a human approves " +
			"it; the result says which. Secrets (passwords, keys, tokens, card numbers) are never stored.",
			Parameters: parameters(rememberType)}, Sends: []string{ListenerName}, Call: s.remember, Once: true},
		{Spec: llm.ToolSpec{Name: RecallTool, Description: "Search what was remembered for the user of this " +
			"conversation; returns the matching memories, best first, as JSON.", Parameters: parameters(recallType)},
			Call: s.recall},
	}
}

// remember checks a remember call and sends it to the memory listener (the
// organism's governance delivers, holds or refuses it); the call's result
// is the listener's answer or the refusal.
func (s *Service) remember(ctx context.Context, c llm.LocalCall) (llm.LocalResult, error) {
	policy, ok := s.Policy(c.Agent)
	if !ok {
		return llm.LocalResult{}, ErrNotAllowed
	}
	p, _, err := decodeArgs[Remember](rememberType, c.Arguments)
	if err != nil {
		return llm.LocalResult{}, fmt.Errorf("invalid arguments: %w", err)
	}
	if err := s.check(p); err != nil {
		return llm.LocalResult{Content: "Not remembered: " + err.Error(), IsError: true}, nil
	}
	if f, bad := Prohibited(p.Content + "\n" + strings.Join(p.Tags, " ")); bad {
		s.refused(Refusal{Agent: c.Agent, User: c.Metadata.User, Thread: c.Thread, Finding: f})
		return llm.LocalResult{Content: "Not remembered: " + f.Reason + ". Secrets are never stored, whatever the " +
			"consent; remember the rest without it.", IsError: true}, nil
	}
	if policy == ConsentNever {
		return llm.LocalResult{Content: "Not remembered: this organism's memory consent policy is never.",
			IsError: true}, nil
	}
	return llm.LocalResult{Send: &xmlpipe.SendResponse{To: ListenerName, Payload: p}}, nil
}

// check refuses empty or oversized content and bad tags.
func (s *Service) check(p *Remember) error {
	max := DefaultMaxBytes
	if s.MaxBytes != nil && s.MaxBytes() > 0 {
		max = s.MaxBytes()
	}
	switch {
	case strings.TrimSpace(p.Content) == "":
		return fmt.Errorf("%w: nothing to remember (Content is empty)", ErrContent)
	case len(p.Content) > max:
		return fmt.Errorf("%w: Content is %d bytes, at most %d are kept", ErrContent, len(p.Content), max)
	case !utf8.ValidString(p.Content):
		return fmt.Errorf("%w: Content is not UTF-8", ErrContent)
	case len(p.Tags) > MaxTags:
		return fmt.Errorf("%w: %d tags, at most %d", ErrContent, len(p.Tags), MaxTags)
	}
	for _, t := range p.Tags {
		if strings.TrimSpace(t) == "" || len(t) > MaxTagBytes || strings.ContainsAny(t, "\r\n") || !utf8.ValidString(t) {
			return fmt.Errorf("%w: tag %q must be 1 to %d bytes on one line", ErrContent, t, MaxTagBytes)
		}
	}
	return nil
}

func (s *Service) refused(r Refusal) {
	s.logger().Warn("security event: memory law refused to store prohibited content", "security", true,
		"agent", r.Agent, "user", r.User, "thread", r.Thread, "kind", r.Finding.Kind)
	if s.Refused != nil {
		s.Refused(r)
	}
}

// recallEntry is one memory as recall returns it.
type recallEntry struct {
	ID        string   `json:"id"`
	Content   string   `json:"content"`
	Tags      []string `json:"tags,omitempty"`
	CreatedAt string   `json:"created_at"`
}

// recall searches the memories of the conversation's user.
func (s *Service) recall(ctx context.Context, c llm.LocalCall) (llm.LocalResult, error) {
	if _, ok := s.Policy(c.Agent); !ok {
		return llm.LocalResult{}, ErrNotAllowed
	}
	p, _, err := decodeArgs[Recall](recallType, c.Arguments)
	if err != nil {
		return llm.LocalResult{}, fmt.Errorf("invalid arguments: %w", err)
	}
	limit := p.Limit
	switch {
	case limit <= 0:
		limit = DefaultRecall
	case limit > MaxRecall:
		limit = MaxRecall
	}
	book, err := s.Book(ctx)
	if err != nil {
		return llm.LocalResult{}, err
	}
	rows, err := book.Memories(ctx, store.MemoryQuery{User: c.Metadata.User, Text: p.Query, Limit: limit})
	if err != nil {
		return llm.LocalResult{}, err
	}
	out := struct {
		Memories []recallEntry `json:"memories"`
		Note     string        `json:"note,omitempty"`
	}{Memories: []recallEntry{}}
	for _, r := range rows {
		out.Memories = append(out.Memories, recallEntry{ID: r.ID, Content: r.Content, Tags: r.Tags,
			CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339)})
	}
	if len(rows) == 0 {
		out.Note = "Nothing remembered matches."
	}
	b, err := json.Marshal(out)
	if err != nil {
		return llm.LocalResult{}, err
	}
	return llm.LocalResult{Content: string(b)}, nil
}

// Handle is the memory listener's handler: it stores what an agent with
// memory asked to remember, once the organism delivered it — under ask only
// with the approval that released it — and answers with Remembered.
func (s *Service) Handle(ctx context.Context, p *Remember, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	policy, ok := s.Policy(md.From)
	if !ok {
		return nil, fmt.Errorf("%w (%s has none)", ErrNotAllowed, md.From)
	}
	// What is wrong with the content is its sender's to fix, and told to
	// it as the remember tool tells it (xmlpipe.InputError).
	if err := s.check(p); err != nil {
		return nil, &xmlpipe.InputError{Err: err}
	}
	if f, bad := Prohibited(p.Content + "\n" + strings.Join(p.Tags, " ")); bad {
		s.refused(Refusal{Agent: md.From, User: md.User, Thread: md.ThreadID, Finding: f})
		return nil, &xmlpipe.InputError{Err: fmt.Errorf("%w: %s", ErrProhibited, f.Reason)}
	}
	row := store.MemoryRow{ID: newID(), User: md.User, Agent: md.From, Content: p.Content, Tags: p.Tags,
		Thread: md.ThreadID, CreatedAt: s.now()}
	var said string
	switch policy {
	case ConsentAlways:
		row.Consent, said = PolicyAlways, "stored under the organism's policy (consent: always)"
		if s.Conversation != nil {
			row.Conversation = s.Conversation(md.ThreadID)
		}
	case ConsentAsk:
		a, found, err := s.Approved(ctx, md.ThreadID)
		if err != nil {
			return nil, fmt.Errorf("memory: look up the consent: %w", err)
		}
		if !found {
			return nil, fmt.Errorf("%w: no approved approval released it", ErrNoConsent)
		}
		row.Consent, row.Conversation = a.ID, a.Conversation
		said = "approved by " + a.DecidedBy + " (approval " + a.ID + ")"
	default:
		return nil, fmt.Errorf("%w: the policy is %s", ErrNoConsent, policy)
	}
	book, err := s.Book(ctx)
	if err != nil {
		return nil, err
	}
	if err := book.PutMemory(ctx, row); err != nil {
		return nil, err
	}
	s.logger().Info("memory stored", "memory", row.ID, "agent", row.Agent, "user", row.User, "consent", row.Consent,
		"thread", md.ThreadID)
	return xmlpipe.Respond(&Remembered{ID: row.ID, Consent: row.Consent,
		Message: fmt.Sprintf("Remembered as memory %s: %s.", row.ID, said)}), nil
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// newID returns a fresh memory id: 12 hex digits.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
