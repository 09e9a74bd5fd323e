// Package guardian reads Agent OS constitution documents (seed 003) and
// applies their rules to the messages that reach or leave the organism's
// agents: the guardian ("Smith") of the organism.
//
// A constitution document is Markdown with YAML frontmatter:
//
//	---
//	document_type: constitution      # required, always "constitution"
//	version: "1.0"                   # required
//	effective_date: "2025-01-15"     # optional, YYYY-MM-DD
//	scope: all_agents                # required: all_agents, or one agent's name
//	authority_level: supreme         # required (supreme, agent_specific, …)
//	amendment_process: pull_request  # optional
//	mode: extend                     # extend (default) or replace: what the body does
//	rules:
//	  - id: no-rm-rf                 # required, unique across every document
//	    # deny: or review: — a Go (RE2) regular expression; a recursive rm however typed
//	    deny: '(?i)\brm\b[^;&|\n]*\s(-[a-z]*r[a-z]*|--recursive)\b'
//	    reason: Destructive shell commands are forbidden   # required
//	    suggestion: Delete single files with the files tool  # optional
//	    severity: high               # low, medium (default), high, critical
//	---
//	# Constitution of the research team
//	…
//
// The body extends (mode: extend) or replaces (mode: replace) the built-in
// constitution text that opens every model request of the agents in the
// document's scope (Guardian.Constitution). The rules of the documents in
// scope apply to every message before it reaches an agent and to every
// message an agent sends (Guardian.Check): a message matching a deny rule
// is refused with a structured <refusal> naming the rule; one matching a
// review rule waits for a human. A rule's expression is matched against the
// payload's text (Text: the character data of its elements) and against
// its canonical XML, so a rule may name a tool's root tag too.
//
// A bad document — bad YAML, a bad regular expression, an unknown key, a
// scope naming no agent, a rule without id, a duplicate id — fails the
// load with file:line.
package guardian
