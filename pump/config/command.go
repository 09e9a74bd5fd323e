package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AllowedCommand is one run_command allow-list entry. In YAML it is a
// program name — which then takes no arguments at all — or the mapping
// {command: NAME, args: [PATTERN, …]}, whose patterns say which arguments
// the program accepts (literals such as "-l", or a literal prefix and one
// placeholder: {file}, {dir}, {text}, {int}; see listeners/tools/command).
type AllowedCommand struct {
	// Command is the program: a bare name (looked up in a fixed PATH) or an
	// absolute path.
	Command string `yaml:"command"`
	// Args are the accepted argument patterns (empty: no arguments).
	Args []string `yaml:"args"`
}

// UnmarshalYAML reads the name or the mapping form; other keys are refused.
func (c *AllowedCommand) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" {
			return fmt.Errorf("want a program name or {command: NAME, args: [...]}, got %s", describe(n))
		}
		*c = AllowedCommand{Command: n.Value}
		return nil
	case yaml.MappingNode:
		var out AllowedCommand
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], deref(n.Content[i+1])
			if seen[k.Value] {
				return fmt.Errorf("duplicate key %q", k.Value)
			}
			seen[k.Value] = true
			switch k.Value {
			case "command":
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
					return fmt.Errorf("command: want a program name, got %s", describe(v))
				}
				out.Command = v.Value
			case "args":
				if v.Kind != yaml.SequenceNode {
					return fmt.Errorf("args: want a list of argument patterns, got %s", describe(v))
				}
				for _, a := range v.Content {
					a = deref(a)
					if a.Kind != yaml.ScalarNode || a.ShortTag() == "!!null" {
						return fmt.Errorf(`args: want argument patterns as strings (quote placeholders: "{file}"), got %s`, describe(a))
					}
					out.Args = append(out.Args, a.Value)
				}
			default:
				return fmt.Errorf("unknown key %q (want command and args)", k.Value)
			}
		}
		if strings.TrimSpace(out.Command) == "" {
			return fmt.Errorf("an allowed_commands entry needs command")
		}
		*c = out
		return nil
	}
	return fmt.Errorf("want a program name or {command: NAME, args: [...]}, got %s", describe(n))
}

// deref follows a few levels of YAML aliases (the decoder bounds the
// document; an unresolved alias stays an alias and is refused as such).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}
