package oob

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// The register-listener classes that name a listener kind rather than a
// catalog payload class. privileged-msg.xsd is fixed and its
// RegisterListener has only <class> and <handler> to say what to run, so
// the kind rides in <class> and its one argument in <handler>.
const (
	// ClassWasm registers a WebAssembly listener: <handler> is the module
	// path, relative to the organism file's directory (the organism
	// confines it to that directory's tree), and the payload contract
	// comes from the module's describe export.
	ClassWasm = "wasm"
	// ClassAgent registers a YAML-style LLM agent: <handler> is its prompt
	// (literal text, or names of blocks of the prompts: section), <peers>
	// whom it may address, <max-concurrent> its workers; model and limits
	// come from the llm: and budgets: sections.
	ClassAgent = "agent"
)

// errNotAgent refuses <class>agent</class> with <is-agent>false</is-agent>.
var errNotAgent = errors.New("class agent registers an LLM agent: is-agent must be true or absent")

// listenerConfig is the listener a register-listener request describes:
// a catalog listener, or by the class convention a WASM listener or a YAML
// agent.
func listenerConfig(a *RegisterListener) (config.Listener, error) {
	lc := config.Listener{Name: a.Name, Description: a.Description, MaxConcurrent: a.MaxConcurrent}
	if a.IsAgent != nil {
		lc.Agent = *a.IsAgent
	}
	if a.Broadcast != nil {
		lc.Broadcast = *a.Broadcast
	}
	if a.Peers != nil {
		lc.Peers = a.Peers.Peers
	}
	switch strings.ToLower(strings.TrimSpace(a.Class)) {
	case ClassWasm:
		lc.Type, lc.Module = config.WasmListener, strings.TrimSpace(a.Handler)
	case ClassAgent:
		if a.IsAgent != nil && !*a.IsAgent {
			return config.Listener{}, errNotAgent
		}
		if strings.TrimSpace(a.Handler) == "" {
			return config.Listener{}, fmt.Errorf("class agent: the handler element holds the agent's prompt and is empty")
		}
		lc.Agent, lc.Prompt = true, a.Handler
	default:
		lc.PayloadClass, lc.Handler = a.Class, a.Handler
	}
	return lc, nil
}
