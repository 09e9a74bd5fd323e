package config

import "strings"

// Scheduling is the thread scheduling policy.
type Scheduling string

// The thread scheduling policies.
const (
	// BreadthFirst round-robins across threads (the default).
	BreadthFirst Scheduling = "breadth-first"
	// DepthFirst runs the deepest chain first.
	DepthFirst Scheduling = "depth-first"
)

// Valid reports whether s is a known policy.
func (s Scheduling) Valid() bool { return s == BreadthFirst || s == DepthFirst }

// normalizeEnum lower-cases an enum value and accepts "_" for "-", as the
// reference does for llm.strategy.
func normalizeEnum(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
}
