package organism

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// haltFile is the file, in a durable organism's data directory, that keeps
// an emergency halt in force across a restart (a crash, a supervisor's
// restart): a line per halt — the organism halt's scope, "agents" or
// "all", and "listener NAME" for each listener halted alone — and it
// exists only while a halt does. An organism that starts with it starts
// halted, so the work the operator stopped is not resumed by anyone but the
// operator.
const haltFile = "halted"

// listenerLine begins a line of the halt file naming a halted listener.
const listenerLine = "listener "

// haltPath is the halt file of the store's directory ("" for an organism
// in memory: its halt ends with the process, as everything else does).
func (g *Governance) haltPath() string {
	if g.dir == "" {
		return ""
	}
	return filepath.Join(g.dir, haltFile)
}

// keepHalt records the halts in force (the pump's), synced to disk, or
// removes the file when none is. It writes in place: a file torn by a crash
// reads as no known scope, which restoreHalt takes for a halt of
// everything — the safe side.
func (g *Governance) keepHalt() error {
	path := g.haltPath()
	if path == "" {
		return nil
	}
	var b strings.Builder
	if scope, ok := g.pump.Halted(); ok {
		b.WriteString(scope.String() + "\n")
	}
	for _, n := range g.pump.HaltedListeners() {
		b.WriteString(listenerLine + n + "\n")
	}
	if b.Len() == 0 {
		return g.dropHalt()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if _, err = f.WriteString(b.String()); err == nil {
			err = f.Sync()
		}
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("organism: keep the halt: %w", err)
	}
	return nil
}

// dropHalt removes the halt file (none is fine).
func (g *Governance) dropHalt() error {
	path := g.haltPath()
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("organism: lift the kept halt: %w", err)
	}
	return nil
}

// restoreHalt halts the pump again when the halt file says a halt was in
// force when the organism last stopped. A file that names no scope halts
// everything: when in doubt, stopped is the safe side.
func (g *Governance) restoreHalt() error {
	path := g.haltPath()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("organism: read the kept halt: %w", err)
	}
	scope, listeners := parseHaltFile(string(b))
	g.restoring.Store(true)
	defer g.restoring.Store(false)
	if scope != 0 {
		rep, err := g.pump.Halt(scope)
		if err != nil {
			return fmt.Errorf("organism: restore the halt: %w", err)
		}
		g.log.Warn("security event: emergency halt still in force from before the restart; resume to lift it",
			"security", true, "scope", rep.Scope.String(), "file", path)
		g.emit(GovernanceEvent{Kind: EventHalted, Time: g.clock(), Scope: rep.Scope.String(), By: "restart"})
	}
	for _, n := range listeners {
		rep, err := g.pump.HaltListener(n)
		if errors.Is(err, pump.ErrUnknownListener) {
			g.log.Warn("a listener halted before the restart is no longer configured: its halt is dropped",
				"listener", n, "file", path)
			continue
		}
		if err != nil {
			return fmt.Errorf("organism: restore the halt of listener %s: %w", n, err)
		}
		g.log.Warn("security event: listener halt still in force from before the restart; resume it to lift it",
			"security", true, "listener", rep.Listener, "file", path)
		g.emit(GovernanceEvent{Kind: EventHalted, Time: g.clock(), Scope: ScopeListener, Listener: rep.Listener,
			By: "restart"})
	}
	if len(listeners) > 0 && len(g.pump.HaltedListeners()) < len(listeners) {
		return g.keepHalt() // without the listeners no longer there
	}
	return nil
}

// parseHaltFile reads the halt file's text: the organism halt's scope (0:
// none) and the listeners halted alone. A line it does not know — a file a
// crash tore, empty or cut — halts everything: when in doubt, stopped is
// the safe side.
func parseHaltFile(text string) (pump.HaltScope, []string) {
	var scope pump.HaltScope
	var listeners []string
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for _, line := range lines {
		line = strings.TrimSpace(line)
		switch {
		case line == pump.HaltAgents.String() && scope == 0:
			scope = pump.HaltAgents
		case line == pump.HaltAll.String():
			scope = pump.HaltAll
		case strings.HasPrefix(line, listenerLine) && strings.TrimSpace(line[len(listenerLine):]) != "":
			listeners = append(listeners, strings.TrimSpace(line[len(listenerLine):]))
		default:
			scope = pump.HaltAll
		}
	}
	return scope, listeners
}
