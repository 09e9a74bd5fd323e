package config

import "slices"

// checkUnlistedTool reports tool_config.<tool> for a tool not in tools.
// When a tools entry is a likely typo of it ("calculte" beside
// tool_config's "calculate"), the typo is what is wrong: it is told at its
// own tools line, with the name it likely meant, and tool_config is left
// alone (fixing the typo makes it right).
func checkUnlistedTool(r *reporter, path string, tools []string, tool string) {
	if near := closest(tool, tools); near != "" {
		j := slices.Index(tools, near)
		r.add(childIndex(path+".tools", j), "tool %q is not %q, which tool_config configures (did you mean %q?)",
			near, tool, tool)
		return
	}
	r.add(path+".tool_config."+tool, "tool %q is not listed in tools (nor is this listener the tool)", tool)
}
