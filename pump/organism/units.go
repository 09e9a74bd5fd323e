package organism

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"sync/atomic"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/regfile"
)

// unitKind is how a listeners[] entry (or an implicit tool) is built.
type unitKind int

const (
	// catalogUnit is a compiled-in listener (payload_class and handler).
	catalogUnit unitKind = iota
	// wasmUnit is a WebAssembly listener.
	wasmUnit
	// agentUnit is a YAML agent (the agent loop over the LLM router).
	agentUnit
	// mountUnit is an mcp listener: one listener per tool of its server.
	mountUnit
	// toolUnit is a native tool an agent lists without declaring it.
	toolUnit
)

// unit is one configured listener as the organism built it: the entry it
// came from and what it registered and holds. A reload compares units to
// the new configuration's entries; an unchanged unit is left as it is.
type unit struct {
	// lc is the entry as written (peers naming gateways not expanded).
	lc   config.Listener
	kind unitKind
	// names are the pump listeners it registered (a mount: one per tool).
	names []string
	// stamp is a wasm unit's digest of its module and xsd files.
	stamp string
	// prompt is an agent's resolved prompt.
	prompt string
	// wasm is a wasm unit's module.
	wasm *wasm.Listener
	// mount is a mount unit's session.
	mount *mount
	// partial marks a unit some of whose listeners were removed while
	// running (unregister-listener): the next reload builds it again.
	partial atomic.Bool
}

// unitKindOf is how lc is built (implicit: a tool no entry declares).
func unitKindOf(lc config.Listener, implicit bool) unitKind {
	switch {
	case implicit:
		return toolUnit
	case lc.Type == config.MCPListener:
		return mountUnit
	case lc.YAMLAgent():
		return agentUnit
	case lc.Type == config.WasmListener:
		return wasmUnit
	}
	return catalogUnit
}

// wasmStamp digests the files a wasm entry reads (module and xsd): a reload
// rebuilds a wasm listener whose files changed even when its entry did
// not. A file that cannot be read digests as its error, so it never
// matches a readable one.
func wasmStamp(lc config.Listener) string {
	h := sha256.New()
	for _, p := range []string{lc.ModulePath(), lc.XSD} {
		io.WriteString(h, "\x00"+p+"\x00")
		if p == "" {
			continue
		}
		f, err := regfile.Open(p) // a FIFO would block the reload
		if err != nil {
			io.WriteString(h, "error: "+err.Error())
			continue
		}
		if _, err := io.Copy(h, io.LimitReader(f, MaxLiveModuleBytes+1)); err != nil {
			io.WriteString(h, "error: "+err.Error())
		}
		f.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// unitKey is the key of an entry in the organism's units.
func unitKey(name string) string { return strings.ToLower(name) }
