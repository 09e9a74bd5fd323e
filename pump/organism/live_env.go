package organism

import (
	"context"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// liveCompleter is the completer catalog listeners get (catalog.Env.LLM):
// each call goes to the completer of the configuration in force, which a
// reload replaces (new backends, prompts or budgets) without rebuilding
// the listeners that hold it.
type liveCompleter struct {
	cur atomic.Pointer[llm.Completer]
}

// Complete implements hello.Completer with the current completer.
func (c *liveCompleter) Complete(ctx context.Context, agent, thread, userMessage string) (string, error) {
	cur := c.cur.Load()
	if cur == nil {
		return "", ErrNoLLM
	}
	return cur.Complete(ctx, agent, thread, userMessage)
}

// livePolicy is the tool policy native tools get (catalog.Env.Tools): the
// tool_config entries of the configuration in force, which a reload
// replaces; a tool reads it at every call.
type livePolicy struct {
	cur atomic.Pointer[toolPolicy]
}

// newLivePolicy holds p.
func newLivePolicy(p toolPolicy) *livePolicy {
	lp := &livePolicy{}
	lp.cur.Store(&p)
	return lp
}

// Config implements tools.Policy with the current entries.
func (p *livePolicy) Config(caller, tool string) tools.Config {
	return p.cur.Load().Config(caller, tool)
}

// set replaces the entries.
func (p *livePolicy) set(tp toolPolicy) { p.cur.Store(&tp) }
