package llm

import (
	_ "embed"
	"strings"
)

//go:embed constitution.txt
var constitution string

// Constitution returns the organism's constitution: the project's own "no
// paperclippers" text, the first system message of every agent request (Q25).
func Constitution() string { return strings.TrimSpace(constitution) }
