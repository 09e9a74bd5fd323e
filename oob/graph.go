package oob

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// graphNode is one listener (or remote gateway) of the organism graph.
type graphNode struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // "agent", "listener", "system" or "gateway"
	RootTag string `json:"root_tag,omitempty"`
}

// graphEdge is a peer relation: From may send to To.
type graphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// organismGraph is the listener/peer graph.
type organismGraph struct {
	Organism string      `json:"organism"`
	Nodes    []graphNode `json:"nodes"`
	Edges    []graphEdge `json:"edges"`
}

// buildGraph collects the listeners, their peer edges and (includeRemote)
// the configured gateways.
func (o *operations) buildGraph(includeRemote bool) organismGraph {
	g := organismGraph{Organism: o.t.Pump.Organism(), Nodes: []graphNode{}, Edges: []graphEdge{}}
	known := map[string]bool{}
	for _, l := range o.t.Pump.Listeners() {
		kind := "listener"
		switch {
		case l.Agent:
			kind = "agent"
		case strings.HasPrefix(l.Name, "system."), strings.HasPrefix(l.Name, "core."):
			kind = "system" // the organism's own, core.* meta listeners too
		}
		g.Nodes = append(g.Nodes, graphNode{Name: l.Name, Kind: kind, RootTag: l.RootTag})
		known[strings.ToLower(l.Name)] = true
		for _, p := range l.Peers {
			g.Edges = append(g.Edges, graphEdge{From: l.Name, To: p})
		}
	}
	gateways := map[string]bool{}
	for _, gw := range o.t.config().Gateways {
		gateways[strings.ToLower(gw.Name)] = true
		if includeRemote {
			g.Nodes = append(g.Nodes, graphNode{Name: gw.Name, Kind: "gateway", RootTag: gw.RemoteURL})
		}
	}
	if !includeRemote {
		kept := g.Edges[:0]
		for _, e := range g.Edges {
			if !gateways[strings.ToLower(e.To)] {
				kept = append(kept, e)
			}
		}
		g.Edges = kept
	}
	sort.SliceStable(g.Edges, func(i, j int) bool {
		if g.Edges[i].From != g.Edges[j].From {
			return g.Edges[i].From < g.Edges[j].From
		}
		return g.Edges[i].To < g.Edges[j].To
	})
	return g
}

// graph answers get-organism-graph.
func (o *operations) graph(p *Operations) reply {
	a := p.GetOrganismGraph
	if a.Team != "" {
		return o.s.fail(p.ID, CodeNotFound, "no team "+a.Team+" (listeners carry no team in this organism)", "")
	}
	format := a.Format
	if format == "" {
		format = "mermaid"
	}
	text, err := renderGraph(o.buildGraph(a.IncludeRemote), format)
	if err != nil {
		return o.s.fail(p.ID, CodeInternal, "the graph could not be rendered", err.Error())
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{OrganismGraph: &OrganismGraph{Format: format, Graph: text}})}
}

// renderGraph renders g as mermaid, graphviz (dot) or json.
func renderGraph(g organismGraph, format string) (string, error) {
	var b strings.Builder
	ids := map[string]string{}
	id := func(name string) string {
		k := strings.ToLower(name)
		if v, ok := ids[k]; ok {
			return v
		}
		v := fmt.Sprintf("n%d", len(ids))
		ids[k] = v
		return v
	}
	switch format {
	case "mermaid":
		b.WriteString("graph LR\n")
		for _, n := range g.Nodes {
			open, closing := "[", "]"
			switch n.Kind {
			case "agent":
				open, closing = "([", "])"
			case "gateway":
				open, closing = "{{", "}}"
			case "system":
				open, closing = "[/", "/]"
			}
			fmt.Fprintf(&b, "  %s%s\"%s\"%s\n", id(n.Name), open, mermaidText(n.Name), closing)
		}
		for _, e := range g.Edges {
			fmt.Fprintf(&b, "  %s --> %s\n", id(e.From), id(e.To))
		}
	case "graphviz":
		fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n", dotQuote(g.Organism))
		for _, n := range g.Nodes {
			shape := "box"
			switch n.Kind {
			case "agent":
				shape = "ellipse"
			case "gateway":
				shape = "hexagon"
			case "system":
				shape = "note"
			}
			fmt.Fprintf(&b, "  %s [label=%s, shape=%s];\n", id(n.Name), dotQuote(n.Name), shape)
		}
		for _, e := range g.Edges {
			fmt.Fprintf(&b, "  %s -> %s;\n", id(e.From), id(e.To))
		}
		b.WriteString("}\n")
	case "json":
		j, err := json.MarshalIndent(g, "", "  ")
		if err != nil {
			return "", err
		}
		b.Write(j)
	default:
		return "", fmt.Errorf("unknown format %q", format)
	}
	return b.String(), nil
}

// mermaidText escapes a label for a quoted mermaid node.
func mermaidText(s string) string { return strings.ReplaceAll(s, `"`, "#quot;") }

// dotQuote quotes a graphviz ID.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
