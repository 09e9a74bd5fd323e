package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Consent is a memory consent policy: ask, always or never.
type Consent string

// The consent policies.
const (
	// ConsentAsk: each memory waits for a human to approve it (an approval
	// of kind memory); the default.
	ConsentAsk Consent = "ask"
	// ConsentAlways: memories are stored at once.
	ConsentAlways Consent = "always"
	// ConsentNever: nothing is stored.
	ConsentNever Consent = "never"
)

// Valid reports whether c is a known policy.
func (c Consent) Valid() bool { return c == ConsentAsk || c == ConsentAlways || c == ConsentNever }

// Memory limits.
const (
	// DefaultMemoryBytes caps a memory's content unless memory.max_bytes
	// says otherwise; MaxMemoryBytes is the most it may say.
	DefaultMemoryBytes = 4 << 10
	MaxMemoryBytes     = 64 << 10
)

// Memory is the memory: section: the organism's memory consent policy for
// agents with memory (each may override it).
type Memory struct {
	// Consent is the default policy: ask (default), always or never.
	// Prohibited content (keys, passwords, tokens, card numbers) is never
	// stored, whatever the policy.
	Consent Consent `yaml:"consent"`
	// MaxBytes caps a memory's content (default 4096, at most 65536).
	MaxBytes int `yaml:"max_bytes"`
}

// AgentMemory is a listener's memory: key: true (or false) to give an agent
// the remember and recall tools under the organism's consent policy, or a
// mapping {consent: ask|always|never} that gives them under its own.
type AgentMemory struct {
	// On reports that the agent has memory.
	On bool
	// Consent overrides the organism's policy ("" keeps it).
	Consent Consent
}

// UnmarshalYAML reads true/false or {consent: …}.
func (m *AgentMemory) UnmarshalYAML(n *yaml.Node) error {
	const want = "want true, false or {consent: ask|always|never}"
	switch n.Kind {
	case yaml.ScalarNode:
		b, ok := parseBool(n)
		if !ok {
			return fmt.Errorf("%s, got %s", want, describe(n))
		}
		*m = AgentMemory{On: b}
		return nil
	case yaml.MappingNode:
		out := AgentMemory{On: true}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			switch {
			case k.Value != "consent":
				return fmt.Errorf("unknown key %q in memory (want consent)", k.Value)
			case v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str":
				return fmt.Errorf("consent: want ask, always or never, got %s", describe(v))
			}
			out.Consent = Consent(strings.ToLower(strings.TrimSpace(v.Value)))
		}
		*m = out
		return nil
	}
	return fmt.Errorf("%s, got %s", want, describe(n))
}

// MemoryConsent returns the consent policy of l's memory (its own, else the
// organism's) and whether l has memory at all.
func (o *Organism) MemoryConsent(l Listener) (Consent, bool) {
	if !l.Memory.On {
		return "", false
	}
	if l.Memory.Consent != "" {
		return l.Memory.Consent, true
	}
	if o.Memory.Consent != "" {
		return o.Memory.Consent, true
	}
	return ConsentAsk, true
}

// MemoryBytes is memory.max_bytes, else its default.
func (o *Organism) MemoryBytes() int {
	if o.Memory.MaxBytes > 0 {
		return o.Memory.MaxBytes
	}
	return DefaultMemoryBytes
}

// normalizeGovernedAgents canonicalises memory.consent and the agents'
// loop_control spellings.
func (o *Organism) normalizeGovernedAgents() {
	o.Memory.Consent = Consent(normalizeEnum(string(o.Memory.Consent)))
	for i := range o.Listeners {
		normalizeLoopControl(&o.Listeners[i])
	}
}

// checkMemoryPolicy reports a bad memory: section.
func (o *Organism) checkMemoryPolicy(r *reporter) {
	if c := o.Memory.Consent; c != "" && !c.Valid() {
		r.add("memory.consent", "unknown consent %q (want ask, always or never)", c)
	}
	if n := o.Memory.MaxBytes; n < 0 || n > MaxMemoryBytes {
		r.add("memory.max_bytes", "want 1 to %d bytes (0 or unset: %d), got %d", MaxMemoryBytes, DefaultMemoryBytes, n)
	}
}

// checkMemory reports a bad memory: key of listener l.
func checkMemory(r *reporter, path string, l Listener) {
	switch {
	case !l.Memory.On && l.Memory.Consent == "":
	case !l.Agent:
		r.add(path+".memory", "only agents take memory (set agent: true)")
	case l.Memory.Consent != "" && !l.Memory.Consent.Valid():
		r.add(path+".memory", "unknown consent %q (want ask, always or never)", l.Memory.Consent)
	case strings.EqualFold(string(l.ToolCalling), string(XMLToolCalling)):
		r.add(path+".memory", "memory needs native tool calling (the remember and recall tools); this agent has tool_calling: xml")
	}
}
