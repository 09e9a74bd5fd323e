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
// restart): it holds the halt's scope, "agents" or "all", and exists only
// while the halt does. An organism that starts with it starts halted, so
// the work the operator stopped is not resumed by anyone but the operator.
const haltFile = "halted"

// haltPath is the halt file of the store's directory ("" for an organism
// in memory: its halt ends with the process, as everything else does).
func (g *Governance) haltPath() string {
	if g.dir == "" {
		return ""
	}
	return filepath.Join(g.dir, haltFile)
}

// keepHalt records scope as the halt in force, synced to disk. It writes
// in place: a file torn by a crash reads as no known scope, which
// restoreHalt takes for a halt of everything — the safe side.
func (g *Governance) keepHalt(scope pump.HaltScope) error {
	path := g.haltPath()
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if _, err = f.WriteString(scope.String() + "\n"); err == nil {
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
	scope := pump.HaltAll // also for a file a crash tore
	if strings.TrimSpace(string(b)) == pump.HaltAgents.String() {
		scope = pump.HaltAgents
	}
	rep, err := g.pump.Halt(scope)
	if err != nil {
		return fmt.Errorf("organism: restore the halt: %w", err)
	}
	g.log.Warn("security event: emergency halt still in force from before the restart; resume to lift it",
		"security", true, "scope", rep.Scope.String(), "file", path)
	g.emit(GovernanceEvent{Kind: EventHalted, Time: g.clock(), Scope: rep.Scope.String(), By: "restart"})
	return nil
}
