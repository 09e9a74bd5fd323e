package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Warnings lists, located as "file:line: path: …", what in a valid
// configuration will not do what its Python reading suggests, with what to
// write instead. `xmlpipe validate` prints them and the organism logs them at
// start; none stops it.
//
// A handler agent (agent: true with a compiled-in handler) without peers
// or tools: the Python server enforced peers only for an agent whose list
// was non-empty, so such an agent sent anywhere; here an agent reaches only
// its peers, and every forward of its handler would be refused as a peer
// violation. An LLM agent without handler and peers only answers its
// caller, which needs none, so it is not warned of.
//
// An organism.identity or organism.tls file that does not exist, with
// WorkdirHint's advice when the Python reading (from the working
// directory) finds it.
func (o *Organism) Warnings() []string {
	var out []string
	if id := o.Organism.Identity; id != "" && missing(id) {
		out = append(out, o.warning("organism.identity", "%s does not exist, so the organism has no identity "+
			"(gateways cannot link): create it with xmlpipe keys init, or correct the path%s", id, o.WorkdirHint(id)))
	}
	for _, f := range []struct{ key, path string }{{"cert", o.Organism.TLS.Cert}, {"key", o.Organism.TLS.Key}} {
		if f.path != "" && missing(f.path) {
			out = append(out, o.warning("organism.tls."+f.key, "%s does not exist, so xmlpipe run cannot start%s",
				f.path, o.WorkdirHint(f.path)))
		}
	}
	for i, l := range o.Listeners {
		if !l.Agent || l.Handler == "" || l.Type != GoListener || len(l.Peers) > 0 || len(l.Tools) > 0 {
			continue
		}
		out = append(out, o.warning(childIndex("listeners", i), "agent %s has a handler but no peers: an agent may "+
			"send only to the listeners its peers name (the Python server let an agent without peers send anywhere), "+
			"so every message its handler sends to another listener is refused as a peer violation; list the "+
			"listeners it sends to under peers:, or remove agent: true if it is no LLM agent", l.Name))
	}
	return out
}

// warning formats a warning about the value at path as a configuration
// error is formatted: "file:line: path: msg" (no position for an
// organism built in code).
func (o *Organism) warning(path, format string, args ...any) string {
	return (&Error{Pos: o.Pos(path), Path: path, Msg: fmt.Sprintf(format, args...)}).Error()
}

// WorkdirHint is advice for a file the configuration names that is missing
// at resolved, its path read from the file's directory: when the file wrote
// a relative path that the working directory holds — the Python server
// read relative paths from there — it says what to write instead; else "".
func (o *Organism) WorkdirHint(resolved string) string {
	rel, ok := o.written[resolved]
	if !ok || !missing(resolved) {
		return ""
	}
	alt, err := filepath.Abs(rel)
	if err != nil || alt == resolved || missing(alt) {
		return ""
	}
	fix, err := filepath.Rel(o.dir, alt)
	if err != nil {
		fix = alt
	}
	return fmt.Sprintf("; relative paths in organism.yaml are read from its directory, %s, not from the working "+
		"directory as the Python server read them: write %s", o.dir, fix)
}

// missing reports whether no file exists at path.
func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}
