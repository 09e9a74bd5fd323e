package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// runUsageNotes is the rest of `xmlpipe run -h`: where the bus listens and
// what a reload does. The keys a reload applies are the organism's own
// (organism.ReloadableKeys, and gateways, which it applies as a diff of
// links), so the help cannot promise another list.
func runUsageNotes() string {
	applied := append(slices.Clone(organism.ReloadableKeys), "gateways")
	reload := "SIGHUP (or POST /api/v1/organism/reload, or xmlpipe ctl reload) reloads organism.yaml in place: " +
		"the new configuration is loaded and its new or changed listeners built first " +
		"(WASM modules compiled, MCP servers connected); if anything fails the reload is refused, " +
		"the reason is logged and the running configuration stays. Otherwise it is applied as a diff: " +
		"running conversations finish on the listeners they started with, unchanged listeners are not " +
		"touched, clients stay connected and the bus keeps serving. " +
		strings.Join(applied[:len(applied)-1], ", ") + " and " + applied[len(applied)-1] +
		" apply at once; a reload that changes any other key (port, bind, data_dir, tls, identity, " +
		"oob, journal, auth, ...) is refused, naming it: restart to apply those."
	return `
The main bus listens on organism.bind:organism.port, 127.0.0.1:8765 unless
organism.yaml or --listen says otherwise (--insecure-dev accepts a loopback
address only).

` + wrapWords(reload, 75) + "\n"
}

// wrapWords breaks text into lines of at most width characters at spaces
// (a longer word keeps a line of its own).
func wrapWords(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		switch {
		case n == 0:
		case n+1+len(w) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// runRun is `xmlpipe run [--log-level L] [--log-format text|json] [--data DIR] [--listen ADDR]
// [--insecure-dev] [organism.yaml]`: the organism headless with its main bus
// (HTTPS + WSS on organism.bind:organism.port, 127.0.0.1:8765 by default),
// logging to stderr, until SIGINT or SIGTERM (or POST
// /api/v1/organism/stop), then a graceful shutdown that drains in-flight
// messages. SIGHUP (or POST /api/v1/organism/reload) reloads organism.yaml
// in place (see runUsageNotes).
func runRun(ctx context.Context, args []string, std streams) int {
	fs := newFlags("run", "[--log-level L] [--log-format text|json] [--data DIR] [--listen ADDR] [--insecure-dev] [organism.yaml]", std.err)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(std.err, runUsageNotes())
	}
	levelName := fs.String("log-level", "info", "minimum log level: debug, info, warn or error")
	logFormat := logFormatFlag(fs)
	data := dataFlag(fs)
	listen := fs.String("listen", "", "serve the main bus on ADDR (host:port) instead of organism.bind:organism.port (default 127.0.0.1:8765)")
	insecure := fs.Bool("insecure-dev", false, "plain HTTP and no authentication (every client is an admin): local development only, loopback addresses only")
	cfgFile := configFlag(fs, "organism.yaml to run (or give it as the argument)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if pos, ok = configPos(fs, pos, *cfgFile); !ok {
		return exitUsage
	}
	if !wantArgs(fs, pos, 0, 1) {
		return exitUsage
	}
	if err := checkListen(*listen, *insecure); err != nil {
		fmt.Fprintf(std.err, "xmlpipe run: %v\n", err)
		return exitUsage
	}
	level, err := parseLogLevel(*levelName)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe run: %v\n", err)
		return exitUsage
	}
	lv := new(slog.LevelVar)
	lv.Set(level)
	logger, err := newLogger(std.err, *logFormat, lv)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe run: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	r := &serveRunner{src: resolveConfig(pos), data: *data, listen: *listen, insecure: *insecure, log: logger, level: lv,
		std: std, hup: hup, flags: runFlagsFor(pos, *data)}
	return r.run(ctx)
}

// runFlagsFor repeats the configuration and --data arguments of this run, so
// the commands it suggests (xmlpipe users add …) act on the same store.
func runFlagsFor(pos []string, data string) string {
	var s string
	if data != "" {
		s += " --data " + data
	}
	if len(pos) > 0 {
		s += " --config " + pos[0]
	}
	return s
}
