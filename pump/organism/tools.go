package organism

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// toolPolicy gives a native tool the tool_config that applies to a caller:
// the caller's own entry for the tool, else the tool listener's own entry,
// else nothing (the tool's safe defaults).
type toolPolicy map[string]map[string]config.ToolConfig // lower listener → lower tool → entry

func newToolPolicy(cfg *config.Organism) toolPolicy {
	p := toolPolicy{}
	for _, l := range cfg.Listeners {
		if len(l.ToolConfig) == 0 {
			continue
		}
		m := map[string]config.ToolConfig{}
		for tool, tc := range l.ToolConfig {
			m[strings.ToLower(tool)] = tc
		}
		p[strings.ToLower(l.Name)] = m
	}
	return p
}

// Config implements tools.Policy.
func (p toolPolicy) Config(caller, tool string) tools.Config {
	tool = strings.ToLower(tool)
	if tc, ok := p[strings.ToLower(caller)][tool]; ok {
		return toolConfig(tc)
	}
	if tc, ok := p[tool][tool]; ok {
		return toolConfig(tc)
	}
	return tools.Config{}
}

// toolConfig converts an organism.yaml entry, reading the secrets it names
// from the environment.
func toolConfig(tc config.ToolConfig) tools.Config {
	c := tools.Config{
		AllowedDomains: tc.AllowedDomains, AllowedPaths: tc.AllowedPaths, AllowedCommands: tc.AllowedCommands,
		Env: tc.Env, ReadOnly: tc.ReadOnly, Timeout: tc.Timeout.D(), MaxBytes: tc.MaxBytes, MaxRedirects: tc.MaxRedirects,
		MaxExpressionLength: tc.MaxExpressionLength, MaxExponent: tc.MaxExponent, MaxResultDigits: tc.MaxResultDigits,
		Provider: tc.Provider, EngineID: tc.EngineID, URL: tc.URL, Username: tc.Username,
	}
	if tc.APIKeyEnv != "" {
		c.APIKey = os.Getenv(tc.APIKeyEnv)
	}
	if tc.PasswordEnv != "" {
		c.Password = os.Getenv(tc.PasswordEnv)
	}
	return c
}

// toolListeners returns a listener for every tool named in some listener's
// tools: that no configured listener already provides (by name), so an
// agent reaches "calculate" by listing it.
func toolListeners(cfg *config.Organism, cat *catalog.Catalog) ([]config.Listener, error) {
	declared := map[string]bool{}
	for _, l := range cfg.Listeners {
		declared[strings.ToLower(l.Name)] = true
	}
	var out []config.Listener
	var errs []string
	for i, l := range cfg.Listeners {
		for j, name := range l.Tools {
			t, ok := cat.Tool(name)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: unknown tool %q (known: %s)",
					cfg.Pos(fmt.Sprintf("listeners[%d].tools[%d]", i, j)), name, strings.Join(cat.ToolNames(), ", ")))
				continue
			}
			if declared[strings.ToLower(t.Name)] {
				continue
			}
			declared[strings.ToLower(t.Name)] = true
			out = append(out, config.Listener{Name: t.Name, PayloadClass: t.PayloadClass, Handler: t.Handler,
				Description: t.Description})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

// closers are what listeners registered through catalog.Env.AtShutdown.
type closers struct {
	mu  sync.Mutex
	fns []func() error
}

func (c *closers) add(fn func() error) {
	c.mu.Lock()
	c.fns = append(c.fns, fn)
	c.mu.Unlock()
}

// close runs them once, last registered first.
func (c *closers) close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	var errs []error
	for i := len(fns) - 1; i >= 0; i-- {
		errs = append(errs, fns[i]())
	}
	return errors.Join(errs...)
}
