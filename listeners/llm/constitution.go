package llm

import (
	_ "embed"
	"strings"
)

//go:embed constitution.txt
var constitution string

// Constitution returns the organism's constitution: the project's own "no
// paperclippers" text, the first system message of every agent request (Q25).
// Constitution documents may extend or replace it per agent (Agent.Constitution).
func Constitution() string { return strings.TrimSpace(constitution) }

// constitution is the agent's constitution text: its own, else the
// built-in one.
func (a *Agent) constitution() string {
	if a.Constitution != "" {
		return a.Constitution
	}
	return Constitution()
}
