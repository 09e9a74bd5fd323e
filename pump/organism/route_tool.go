package organism

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/route"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// routeToolDescription is what the model reads about the route tool.
const routeToolDescription = "Finds what can do what you describe in words, among the tools and peers you may " +
	"address, and asks the best match for it: its answer is this call's result. When the request cannot be " +
	"filled in from your words, the result lists the matches, best first, for you to call one yourself. " +
	"Use it when you do not know which tool or peer does the job."

// orgRef is the organism an LLM layer's agents belong to, set once it is
// assembled (the route tool reads it at call time).
type orgRef struct{ p atomic.Pointer[Organism] }

// routeTool is the route tool of an agent (seed 000 §10): the need is
// ranked against the organism's listeners, masked by what the agent may
// address (its peers and tools, as the pump enforces them), the best
// remaining match is filled from the need and sent as the agent's call —
// through the pump's standard pipeline (the router is advisory, §10.5) —
// and its answer becomes the call's result. Nothing the agent may address
// matching is the refusal "no matching capability in your profile"; a
// payload the filler cannot build leaves the ranked matches as the result.
func (l *llmLayer) routeTool() llm.LocalTool {
	return llm.LocalTool{
		Spec: llm.ToolSpec{Name: route.ToolName, Description: routeToolDescription,
			Parameters: route.ToolSpec().Parameters},
		Call: func(ctx context.Context, c llm.LocalCall) (llm.LocalResult, error) {
			o := l.org.p.Load()
			if o == nil {
				return llm.LocalResult{}, errors.New("routing is not available yet")
			}
			return o.routeCall(ctx, c)
		},
	}
}

// routeCall answers one route call of agent c.Agent.
func (o *Organism) routeCall(ctx context.Context, c llm.LocalCall) (llm.LocalResult, error) {
	need, err := route.ParseToolArgs(c.Arguments)
	if err != nil {
		return llm.LocalResult{}, err
	}
	r, err := o.Router()
	if err != nil {
		return llm.LocalResult{}, err
	}
	mask, err := o.PeersMask(c.Agent)
	if err != nil {
		return llm.LocalResult{}, err
	}
	// An agent never routes to itself, nor past its thread's profile or its
	// own (PeersMask; the pump would refuse such a send anyway, the
	// ranking never offers it).
	mask = route.Both(mask, route.Deny(c.Agent))
	if p := c.Metadata.Profile; p != nil {
		mask = route.Both(mask, p.Reaches)
	}
	plan, err := r.Plan(ctx, need, mask)
	var fe *route.FillError
	switch {
	case errors.Is(err, route.ErrNoCapability):
		o.log.Info("route: refused", "agent", c.Agent, "thread", c.Thread)
		return llm.LocalResult{Content: route.ErrNoCapability.Error(), IsError: true}, nil
	case errors.As(err, &fe) && ctx.Err() != nil:
		// The fill was cut by the end of the agent's handling (a halt, a
		// kill), not by the words: the call has no result, and the agent
		// holds its turn on the cause.
		return llm.LocalResult{}, fmt.Errorf("route: the fill was stopped: %w", context.Cause(ctx))
	case errors.As(err, &fe):
		o.log.Info("route: no payload filled; the matches are the result", "agent", c.Agent, "thread", c.Thread,
			"selected", fe.Capability, "error", err)
		return llm.LocalResult{Content: candidatesText(plan.Candidates,
			fmt.Sprintf("The request for %s could not be filled in from your words (%v).", fe.Capability, err))}, nil
	case err != nil:
		return llm.LocalResult{}, err
	}
	ln, ok := o.Pump.Lookup(plan.Selected.Name)
	if !ok || ln.Payload == nil {
		return llm.LocalResult{}, fmt.Errorf("%s is gone", plan.Selected.Name)
	}
	o.log.Info("route: dispatched", "agent", c.Agent, "thread", c.Thread, "to", plan.Selected.Name,
		"score", plan.Selected.Score, "filled_by", plan.Fill.By)
	return llm.LocalResult{Send: xmlpipe.SendRef(plan.Selected.Name,
		&xmlpipe.Encoded{Type: ln.Payload, XML: plan.Fill.Payload}, c.ID)}, nil
}

// candidatesText lists ranked candidates for the model, after lead.
func candidatesText(cands []route.Candidate, lead string) string {
	var b strings.Builder
	b.WriteString(lead)
	b.WriteString(" The matches you may call, best first:")
	for _, c := range cands {
		fmt.Fprintf(&b, "\n- %s (score %.2f): %s", c.Name, c.Score, c.Description)
	}
	return b.String()
}
