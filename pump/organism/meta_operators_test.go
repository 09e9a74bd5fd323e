package organism

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/meta"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestMetaOperators: a sender named in Options.MetaOperators (the stdio
// client of xmlpipe mcp) is authenticated for meta introspection, and
// MetaRefuses tells which core listeners refuse a sender outright.
func TestMetaOperators(t *testing.T) {
	o := startMeta(t, nil, Options{MetaOperators: []string{"mcp"}})
	if e := askMeta(t, o, "mcp", askList); e.Kind != pump.EventReply {
		t.Errorf("operator's list-capabilities: %s %q, want a reply", e.Kind, e.Error)
	}
	if e := askMeta(t, o, "stranger", askList); e.Kind != pump.EventHuh {
		t.Errorf("stranger's list-capabilities: %s, want a <huh>", e.Kind)
	}
	adminOnly := startMeta(t, func(c *config.Organism) { c.Meta.AllowSchemaRequests = config.AccessAdmin }, Options{MetaOperators: []string{"mcp"}})
	off := startMeta(t, func(c *config.Organism) { c.Meta.Enabled = false }, Options{MetaOperators: []string{"mcp"}})
	names := []string{meta.NameListCapabilities, meta.NameRequestSchema, meta.NameRequestExample, meta.NameRequestPrompt, "greeter"}
	refused := func(o *Organism, from string) map[string]bool {
		out := map[string]bool{}
		for _, n := range names {
			if o.MetaRefuses(from, n) {
				out[n] = true
			}
		}
		return out
	}
	all := map[string]bool{meta.NameListCapabilities: true, meta.NameRequestSchema: true, meta.NameRequestExample: true, meta.NameRequestPrompt: true}
	tests := []struct {
		name string
		o    *Organism
		from string
		want map[string]bool
	}{
		{"operator", o, "mcp", map[string]bool{}},
		{"stranger", o, "stranger", all},
		{"console", o, "console", map[string]bool{}},
		{"operator, schema admin-only", adminOnly, "mcp", map[string]bool{meta.NameRequestSchema: true}},
		{"meta disabled", off, "console", all},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, refused(tt.o, tt.from)); diff != "" {
			t.Errorf("%s: refused (-want +got):\n%s", tt.name, diff)
		}
	}
}
