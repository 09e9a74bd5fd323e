package mcp

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// tool is what a served tool was built from: a listener's description,
// payload type and declared response type (nil: none). A listener replaced
// with another of any is served anew.
type tool struct {
	description string
	payload     *xmlpipe.PayloadType
	response    *xmlpipe.PayloadType
}

// toolSet keeps one MCP server's tools equal to the listeners the bridge
// serves.
type toolSet struct {
	b    *Bridge
	s    *sdk.Server
	have map[string]tool // only sync touches it, from one goroutine at a time
}

// want is the tools the bridge serves now: the pump's listeners with a
// payload, but the organism's own system.* ones, those Options.Profile
// does not reach and those Options.Refused names.
func (ts *toolSet) want() map[string]tool {
	b := ts.b
	out := map[string]tool{}
	for _, info := range b.p.Listeners() {
		if strings.HasPrefix(info.Name, "system.") ||
			b.opts.Profile != "" && !b.p.ProfileReaches(b.opts.Profile, info.Name) ||
			b.opts.Refused != nil && b.opts.Refused(info.Name) {
			continue
		}
		l, ok := b.p.Lookup(info.Name)
		if !ok || l.Payload == nil {
			continue
		}
		out[info.Name] = tool{description: info.Description, payload: l.Payload, response: l.Response}
	}
	return out
}

// sync adds the tools missing from the server, replaces those whose
// listener changed and removes those whose listener is gone; the SDK tells
// the connected clients the list changed.
func (ts *toolSet) sync() {
	want := ts.want()
	var gone []string
	for name := range ts.have {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(ts.have, name)
		}
	}
	if len(gone) > 0 {
		ts.s.RemoveTools(gone...)
	}
	for name, t := range want {
		if ts.have[name] == t {
			continue
		}
		ts.have[name] = t
		ts.add(name, t)
	}
}

// add serves the listener name as a tool; one that declares its response
// advertises it as the tool's output schema.
func (ts *toolSet) add(name string, t tool) {
	b, pt, rt := ts.b, t.payload, t.response
	st := &sdk.Tool{Name: name, Description: t.description, InputSchema: b.schema(name, pt).advertised}
	if s := outputSchema(rt); s != nil {
		st.OutputSchema = s
	}
	ts.s.AddTool(st, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if req.Extra != nil {
			ctx = withOrigin(ctx, req.Extra.Header)
		}
		progress, flush := progressOf(ctx, req, b.opts.Logger)
		res := b.call(ctx, name, pt, rt, req.Params.Arguments, progress)
		flush() // the progress notifications queued go before the answer
		return res, nil
	})
}

// follow syncs the tools at every change of the routing table (changed is
// the channel taken before the first sync) until the bridge closes.
func (ts *toolSet) follow(changed <-chan struct{}) {
	for {
		select {
		case <-ts.b.life.Done():
			return
		case <-changed:
		}
		changed = ts.b.p.RoutesChanged()
		ts.sync()
	}
}
