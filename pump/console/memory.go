package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// ErrMemoryNotFound: no memory has the id (or it is another user's).
var ErrMemoryNotFound = errors.New("no such memory")

// Memory is one memory an agent kept, as /memory shows it.
type Memory struct {
	ID, User, Agent string
	Content         string
	Tags            []string
	Consent         string
	CreatedAt       time.Time
}

// Rememberer is an optional Backend capability: the memories agents with
// memory kept (/memory, /forget).
type Rememberer interface {
	// Memories lists the memories the user may see, newest first (best
	// first when query holds words).
	Memories(ctx context.Context, query string) ([]Memory, error)
	// Forget deletes the memory id.
	Forget(ctx context.Context, id string) (Memory, error)
}

// Memories implements Rememberer: the in-process console is the
// organism's operator and sees every user's memories.
func (l *Local) Memories(ctx context.Context, query string) ([]Memory, error) {
	ms, err := l.org.Memories(ctx, organism.MemoryFilter{AllUsers: true, Query: query})
	if err != nil {
		return nil, err
	}
	out := make([]Memory, len(ms))
	for i, m := range ms {
		out[i] = localMemory(m)
	}
	return out, nil
}

func localMemory(m organism.Memory) Memory {
	return Memory{ID: m.ID, User: m.User, Agent: m.Agent, Content: m.Content, Tags: m.Tags, Consent: m.Consent,
		CreatedAt: m.CreatedAt}
}

// Forget implements Rememberer.
func (l *Local) Forget(ctx context.Context, id string) (Memory, error) {
	m, err := l.org.ForgetMemory(ctx, id, "", true, localUser)
	if errors.Is(err, organism.ErrMemoryNotFound) {
		return Memory{}, fmt.Errorf("%w: %s", ErrMemoryNotFound, id)
	}
	if err != nil {
		return Memory{}, err
	}
	return localMemory(m), nil
}

// Memories implements Rememberer over GET /api/v1/memory: the user's own.
func (r *Remote) Memories(ctx context.Context, query string) ([]Memory, error) {
	q := url.Values{}
	if query != "" {
		q.Set("q", query)
	}
	var out struct {
		Memories []wire.MemoryInfo `json:"memories"`
	}
	if err := r.rest(ctx, http.MethodGet, "/api/v1/memory?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	ms := make([]Memory, len(out.Memories))
	for i, m := range out.Memories {
		ms[i] = remoteMemory(m)
	}
	return ms, nil
}

func remoteMemory(m wire.MemoryInfo) Memory {
	created, _ := time.Parse(time.RFC3339Nano, m.CreatedAt)
	return Memory{ID: m.ID, User: m.User, Agent: m.Agent, Content: m.Content, Tags: m.Tags, Consent: m.Consent,
		CreatedAt: created}
}

// Forget implements Rememberer over DELETE /api/v1/memory/{id}.
func (r *Remote) Forget(ctx context.Context, id string) (Memory, error) {
	var out struct {
		Deleted wire.MemoryInfo `json:"deleted"`
	}
	err := r.rest(ctx, http.MethodDelete, "/api/v1/memory/"+url.PathEscape(id), nil, &out)
	var se *statusError
	if errors.As(err, &se) && se.status == http.StatusNotFound {
		return Memory{}, fmt.Errorf("%w: %s", ErrMemoryNotFound, id)
	}
	if err != nil {
		return Memory{}, err
	}
	return remoteMemory(out.Deleted), nil
}

func (c *Console) rememberer() (Rememberer, bool) {
	r, ok := c.b.(Rememberer)
	if !ok {
		c.say("Memories are not available over this connection.")
	}
	return r, ok
}

// maxMemoryLine caps the content /memory prints of one memory.
const maxMemoryLine = 120

// cmdMemory is /memory [words]: the memories kept (the user's own over a
// connection, everyone's in process), best first when words are given.
func (c *Console) cmdMemory(ctx context.Context, arg string) {
	r, ok := c.rememberer()
	if !ok {
		return
	}
	ms, err := r.Memories(ctx, arg)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	if len(ms) == 0 {
		c.say("No memories.")
		return
	}
	lines := []string{"Memories:"}
	for _, m := range ms {
		user := m.User
		if user == "" {
			user = "-"
		}
		content := strings.Join(strings.Fields(m.Content), " ")
		if len(content) > maxMemoryLine {
			content = content[:maxMemoryLine] + "…"
		}
		lines = append(lines, fmt.Sprintf("  %s  %s  user %s  by %s  consent %s  %q", m.ID,
			m.CreatedAt.Local().Format(time.DateTime), user, m.Agent, m.Consent, content))
	}
	c.say(lines...)
}

// cmdForget is /forget <id>.
func (c *Console) cmdForget(ctx context.Context, arg string) {
	if arg == "" || strings.ContainsAny(arg, " \t") {
		c.say("Usage: /forget <id>")
		return
	}
	r, ok := c.rememberer()
	if !ok {
		return
	}
	m, err := r.Forget(ctx, arg)
	switch {
	case errors.Is(err, ErrMemoryNotFound):
		c.say("No memory " + arg + ".")
	case err != nil:
		c.say("Error: " + err.Error())
	default:
		c.say(fmt.Sprintf("Memory %s forgotten (kept by %s).", m.ID, m.Agent))
	}
}
