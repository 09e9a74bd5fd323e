package config

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Temperature is an agent's sampling temperature, which may be left unset.
type Temperature struct {
	// Value is the temperature when Set.
	Value float64
	// Set reports whether the file gave one.
	Set bool
}

// Ptr returns the temperature, or nil when unset.
func (t Temperature) Ptr() *float64 {
	if !t.Set {
		return nil
	}
	v := t.Value
	return &v
}

// UnmarshalYAML reads a number.
func (t *Temperature) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return fmt.Errorf("want a number, got %s", describe(n))
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want a number, got %s", describe(n))
	}
	*t = Temperature{Value: v, Set: true}
	return nil
}

// promptRef matches a prompt that names prompt blocks: "a", "a & b".
var promptRef = regexp.MustCompile(`^\s*[A-Za-z_][\w.-]*(\s*&\s*[A-Za-z_][\w.-]*)*\s*$`)

// ResolvePrompt returns an agent's system prompt. A prompt that names
// blocks of the prompts: section — one name, or names joined with "&" — is
// their texts joined in order with a blank line; a name that is not a block
// is an error when the prompt uses "&" or the file has prompt blocks. Any
// other prompt is literal text.
func (o *Organism) ResolvePrompt(prompt string) (string, error) {
	if !promptRef.MatchString(prompt) {
		return prompt, nil
	}
	parts := strings.Split(prompt, "&")
	if len(parts) == 1 && len(o.Prompts) == 0 {
		return prompt, nil
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		name := strings.TrimSpace(p)
		text, ok := o.Prompts[name]
		if !ok {
			if len(parts) == 1 {
				return prompt, nil
			}
			return "", fmt.Errorf("prompt block %q does not exist (prompts: %s)", name, o.promptNames())
		}
		texts = append(texts, strings.TrimSpace(text))
	}
	return strings.Join(texts, "\n\n"), nil
}

func (o *Organism) promptNames() string {
	if len(o.Prompts) == 0 {
		return "none defined"
	}
	names := make([]string, 0, len(o.Prompts))
	for n := range o.Prompts {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// checkAgent checks an agent's own keys.
func (o *Organism) checkAgent(r *reporter, path string, l Listener) {
	if !l.Agent {
		for _, k := range []struct {
			key string
			set bool
		}{{"max_tokens", l.MaxTokens != 0}, {"temperature", l.Temperature.Set}, {"max_iterations", l.MaxIterations != 0},
			{"tool_calling", l.ToolCalling != ""}, {"context_window", l.ContextWindow != 0},
			{"librarian", l.Librarian != nil}, {"route", l.Route}} {
			if k.set {
				r.add(path+"."+k.key, "only agents take %s (set agent: true)", k.key)
			}
		}
		return
	}
	r.nonNegative(path+".max_tokens", l.MaxTokens)
	r.nonNegative(path+".max_iterations", l.MaxIterations)
	checkToolCalling(r, path+".tool_calling", l.ToolCalling)
	checkContextWindow(r, path+".context_window", l.ContextWindow)
	if l.Temperature.Set && (l.Temperature.Value < 0 || l.Temperature.Value > 2) {
		r.add(path+".temperature", "want a number from 0 to 2, got %v", l.Temperature.Value)
	}
	if l.Librarian != nil {
		checkLibrarian(r, path+".librarian", l.Librarian)
	}
	if l.Route && strings.EqualFold(string(l.ToolCalling), string(XMLToolCalling)) {
		// The route tool is a function: an XML-mode model is never offered it.
		r.add(path+".route", "the route tool needs native tool calling; this agent has tool_calling: xml")
	}
	if !l.YAMLAgent() {
		for _, k := range []struct {
			key string
			set bool
		}{{"librarian", l.Librarian != nil}, {"route", l.Route}} {
			if k.set {
				r.add(path+"."+k.key, "only agents declared in organism.yaml (agent: true, no handler) take %s", k.key)
			}
		}
	}
	if l.YAMLAgent() && strings.TrimSpace(l.Prompt) == "" {
		r.missing(path, "prompt")
	}
	if _, err := o.ResolvePrompt(l.Prompt); err != nil {
		r.add(path+".prompt", "%v", err)
	}
}

// checkToolCalling reports an unknown tool_calling mode.
func checkToolCalling(r *reporter, path string, t ToolCalling) {
	if !t.Valid() {
		r.add(path, "unknown tool_calling %q (want native or xml)", t)
	}
}

// minContextWindow is the smallest context_window accepted: less cannot hold
// the constitution and a prompt.
const minContextWindow = 1024

// checkContextWindow reports a context_window too small to use.
func checkContextWindow(r *reporter, path string, tokens int) {
	if tokens != 0 && tokens < minContextWindow {
		r.add(path, "want at least %d tokens (or leave it unset), got %d", minContextWindow, tokens)
	}
}
