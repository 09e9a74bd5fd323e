package organism

import (
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/mcpclient"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// timeoutMargin is what a listener's default deadline adds to the longest
// time its configuration lets one call take: the pump's deadline backs up
// the listener's own limits and must not cut them short.
const timeoutMargin = 10 * time.Second

// withTimeout fills in lc's handler deadline when organism.yaml sets none:
// the pump's default for its kind (pump.DefaultHandlerTimeout, or
// pump.DefaultAgentTimeout for an agent), unless its configuration lets one
// call take longer — the longest tool_config timeout of a tool it is, its
// mcp server's timeout, its wasm capabilities.timeout, an agent's longest
// llm backend timeout — then that plus timeoutMargin.
func withTimeout(cfg *config.Organism, lc config.Listener) config.Listener {
	if lc.Timeout > 0 {
		return lc
	}
	def, need := pump.DefaultHandlerTimeout, time.Duration(0)
	switch {
	case lc.Agent:
		def = pump.DefaultAgentTimeout
		for _, b := range cfg.LLM.Backends {
			need = max(need, b.Timeout.D())
		}
	case lc.Type == config.MCPListener:
		need = lc.Server.Timeout.D()
		if need == 0 {
			need = mcpclient.DefaultTimeout
		}
	case lc.Type == config.WasmListener:
		need = lc.Capabilities.Timeout.D()
		if need == 0 {
			need = wasm.DefaultTimeout
		}
	default:
		// A tool's limits come from its callers' tool_config entries (and
		// its own, under its own name).
		for _, other := range cfg.Listeners {
			for tool, tc := range other.ToolConfig {
				if strings.EqualFold(tool, lc.Name) {
					need = max(need, tc.Timeout.D())
				}
			}
		}
	}
	if need > 0 && need+timeoutMargin > def {
		lc.Timeout = config.Duration(need + timeoutMargin)
	}
	return lc
}

// admitWait maps organism.yaml's admit_wait to pump.Options.AdmitWait (and
// max_queue_wait to MaxQueueWait), where 0 means the default and a
// negative value "not at all" (no bound).
func admitWait(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
