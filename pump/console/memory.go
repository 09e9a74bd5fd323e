package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/client"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Memories implements Rememberer over GET /api/v1/memory: the user's own.
func (r *Remote) Memories(ctx context.Context, query string) ([]organism.Memory, error) {
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
	ms := make([]organism.Memory, len(out.Memories))
	for i, m := range out.Memories {
		ms[i] = remoteMemory(m)
	}
	return ms, nil
}

func remoteMemory(m wire.MemoryInfo) organism.Memory {
	created, _ := time.Parse(time.RFC3339Nano, m.CreatedAt)
	return organism.Memory{ID: m.ID, User: m.User, Agent: m.Agent, Content: m.Content, Tags: m.Tags, Consent: m.Consent,
		CreatedAt: created}
}

// Forget implements Rememberer over DELETE /api/v1/memory/{id}.
func (r *Remote) Forget(ctx context.Context, id string) (organism.Memory, error) {
	var out struct {
		Deleted wire.MemoryInfo `json:"deleted"`
	}
	err := r.rest(ctx, http.MethodDelete, "/api/v1/memory/"+url.PathEscape(id), nil, &out)
	if se, ok := errors.AsType[*client.StatusError](err); ok && se.Status == http.StatusNotFound {
		return organism.Memory{}, fmt.Errorf("%w: %s", organism.ErrMemoryNotFound, id)
	}
	if err != nil {
		return organism.Memory{}, err
	}
	return remoteMemory(out.Deleted), nil
}

func (c *Console) rememberer() (organism.Rememberer, bool) {
	r, ok := c.b.(organism.Rememberer)
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
	case errors.Is(err, organism.ErrMemoryNotFound):
		c.say("No memory " + arg + ".")
	case err != nil:
		c.say("Error: " + err.Error())
	default:
		c.say(fmt.Sprintf("Memory %s forgotten (kept by %s).", m.ID, m.Agent))
	}
}
