package console

import (
	"context"
	"fmt"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// configEditHint is what /config says about changing the configuration:
// the console shows it; the file is where it is edited.
var configEditHint = []string{
	"Edit the configuration in its file, then reload it (xmlpipe run: kill -HUP <pid>; or POST /api/v1/organism/reload as an admin);",
	"the ports, limits and scheduling apply only at the next start.",
}

// cmdConfig is /config (or /config --show): the organism's settings,
// read-only and without secrets. The reference's editing forms (-e,
// --edit, @listener, --list) are answered with where editing is done.
func (c *Console) cmdConfig(ctx context.Context, arg string) {
	switch {
	case arg == "" || arg == "--show":
	case arg == "-e" || arg == "--edit" || arg == "--list" || strings.HasPrefix(arg, "@"):
		c.say(append([]string{"The console does not edit the configuration."}, configEditHint...)...)
		return
	default:
		c.say("Unknown option: "+arg, "Usage: /config [--show]")
		return
	}
	r, ok := c.b.(organism.ConfigReporter)
	if !ok {
		c.say("The configuration is not available over this connection.")
		return
	}
	st, err := r.Settings(ctx)
	if err != nil {
		c.say("The configuration is not available: " + err.Error())
		return
	}
	file := st.File
	if _, remote := c.b.(*Remote); remote && file == "" {
		file = "on the server (its path is not shown over a connection)"
	} else if file == "" {
		file = "none (the organism was built in code)"
	}
	oob := st.OOB
	if oob == "" {
		oob = "disabled"
	}
	c.say("Organism: "+st.Organism,
		"Config file: "+file,
		"Main bus: "+st.Bus,
		"OOB channel: "+oob,
		"Thread scheduling: "+st.ThreadScheduling,
		fmt.Sprintf("Max concurrent pipelines: %d", st.MaxConcurrentPipelines),
		fmt.Sprintf("Max concurrent handlers: %d", st.MaxConcurrentHandlers),
		fmt.Sprintf("Max concurrent per agent: %d", st.MaxConcurrentPerAgent),
		fmt.Sprintf("Max chain depth: %d", st.MaxChainDepth),
		fmt.Sprintf("Max in flight: %d", st.MaxInFlight))
	c.say(configEditHint...)
}
