package registry

import "strings"

// nudgeHeader opens every nudge (python-reference.md §4.10).
const nudgeHeader = "[SYSTEM NOTE: The following todos appear complete:]"

// FormatNudge renders raised watchers as the system note an agent sees in
// Metadata.TodoNudge: "" for none, otherwise a header line and two lines per
// watcher, joined with "\n", exactly as the Python reference:
//
//	[SYSTEM NOTE: The following todos appear complete:]
//	  - Waiting for {wait_for} ({description}): received from {triggered_from}
//	    Close with: <TodoComplete><Id>{id}</Id></TodoComplete>
//
// The " ({description})" part is left out when the description is empty.
func FormatNudge(ws []*Watcher) string {
	if len(ws) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(nudgeHeader)
	for _, w := range ws {
		b.WriteString("\n  - Waiting for ")
		b.WriteString(w.WaitFor)
		if w.Description != "" {
			b.WriteString(" (")
			b.WriteString(w.Description)
			b.WriteString(")")
		}
		b.WriteString(": received from ")
		b.WriteString(w.TriggeredFrom)
		b.WriteString("\n    Close with: <TodoComplete><Id>")
		b.WriteString(w.ID)
		b.WriteString("</Id></TodoComplete>")
	}
	return b.String()
}
