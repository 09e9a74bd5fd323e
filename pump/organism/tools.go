package organism

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// toolPolicy gives a native tool the tool_config that applies to a caller:
// the caller's own entry for the tool, else the tool listener's own entry,
// else nothing (the tool's safe defaults). Every entry carries the
// organism's data directory, which no tool reaches into.
type toolPolicy struct {
	entries map[string]map[string]config.ToolConfig // lower listener → lower tool → entry
	dataDir string
}

func newToolPolicy(cfg *config.Organism, dataDir string) toolPolicy {
	p := toolPolicy{entries: map[string]map[string]config.ToolConfig{}, dataDir: dataDir}
	for _, l := range cfg.Listeners {
		if len(l.ToolConfig) == 0 {
			continue
		}
		m := map[string]config.ToolConfig{}
		for tool, tc := range l.ToolConfig {
			m[strings.ToLower(tool)] = tc
		}
		p.entries[strings.ToLower(l.Name)] = m
	}
	return p
}

// Config implements tools.Policy.
func (p toolPolicy) Config(caller, tool string) tools.Config {
	tool = strings.ToLower(tool)
	if tc, ok := p.entries[strings.ToLower(caller)][tool]; ok {
		return toolConfig(tc, p.dataDir)
	}
	if tc, ok := p.entries[tool][tool]; ok {
		return toolConfig(tc, p.dataDir)
	}
	return tools.Config{DataDir: p.dataDir}
}

// toolConfig converts an organism.yaml entry, reading the secrets it names
// from the environment.
func toolConfig(tc config.ToolConfig, dataDir string) tools.Config {
	c := tools.Config{
		AllowedDomains: tc.AllowedDomains, AllowedPaths: tc.AllowedPaths, Env: tc.Env, RunAs: tc.RunAs,
		SharedNamespaces: tc.SharedNamespaces, ReadOnly: tc.ReadOnly, Timeout: tc.Timeout.D(), MaxBytes: tc.MaxBytes,
		MaxDiskBytes: tc.MaxDiskBytes, MaxKeys: tc.MaxKeys, MaxTotalBytes: tc.MaxTotalBytes, ConversationTTL: tc.ConversationTTL.D(),
		MaxRedirects: tc.MaxRedirects, MaxExpressionLength: tc.MaxExpressionLength, MaxExponent: tc.MaxExponent,
		MaxResultDigits: tc.MaxResultDigits, Provider: tc.Provider, EngineID: tc.EngineID, URL: tc.URL,
		Username: tc.Username, DataDir: dataDir,
	}
	for _, a := range tc.AllowedCommands {
		c.AllowedCommands = append(c.AllowedCommands, tools.Command{Name: a.Command, Args: a.Args})
	}
	if tc.APIKeyEnv != "" {
		c.APIKey, c.APIKeyEnv = os.Getenv(tc.APIKeyEnv), tc.APIKeyEnv
	}
	if tc.PasswordEnv != "" {
		c.Password = os.Getenv(tc.PasswordEnv)
	}
	return c
}

// toolDataDir is the data directory tools must stay out of: the durable
// store's (which a --data flag may have moved), else the configured one.
func toolDataDir(cfg *config.Organism, d *durable) string {
	if d != nil {
		return d.store.Dir()
	}
	return cfg.Organism.DataDir
}

// checkToolConfigs runs each tool's own load-time check on every
// tool_config entry naming it (missing or misplaced roots, a malformed
// allow-list, a root run_as…), so a bad entry is a configuration error
// with its file:line instead of a refusal at call time.
func checkToolConfigs(cfg *config.Organism, cat *catalog.Catalog, dataDir string) error {
	var errs []error
	for i, l := range cfg.Listeners {
		names := make([]string, 0, len(l.ToolConfig))
		for name := range l.ToolConfig {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t, ok := cat.Tool(name)
			if !ok || t.Check == nil {
				continue
			}
			if err := t.Check(toolConfig(l.ToolConfig[name], dataDir)); err != nil {
				errs = append(errs, cfg.Errorf(fmt.Sprintf("listeners[%d].tool_config.%s", i, name), "%s", err.Error()))
			}
		}
	}
	return errors.Join(errs...)
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
	var errs []error
	for i, l := range cfg.Listeners {
		for j, name := range l.Tools {
			t, ok := cat.Tool(name)
			if !ok {
				known := cat.ToolNames()
				hint := config.PythonToolHint(name)
				if hint == "" {
					hint = config.Suggest(name, known)
				}
				if hint == "" {
					hint = " (known: " + strings.Join(known, ", ") + ")"
				}
				errs = append(errs, cfg.Errorf(fmt.Sprintf("listeners[%d].tools[%d]", i, j), "unknown tool %q%s", name, hint))
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
	if err := errors.Join(errs...); err != nil {
		return nil, err
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
