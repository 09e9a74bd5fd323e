package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/mcp"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// mcpFrom is the <from> of the MCP clients' calls.
const mcpFrom = "mcp"

// runMCP is `xmlpipe mcp [--data DIR] [--http ADDR] [--timeout D] [--drain D]
// [organism.yaml]`: the organism in-process, its listeners served as MCP
// tools over stdio (stdout carries only the protocol; logs go to stderr), or
// over streamable HTTP on ADDR with --http. On stdio a bad line is answered
// with a JSON-RPC error and the session goes on; at the end of input every
// request read is answered (calls still running after --drain are
// cancelled) and the command exits.
func runMCP(ctx context.Context, args []string, std streams) int {
	fs := newFlags("mcp", "[--data DIR] [--http ADDR] [--session-idle 1h] [--max-sessions 1024] [--max-sessions-per-addr 64] [--timeout 2m] [--drain 30s] [--log-level L] [--profile P] [organism.yaml]", std.err)
	data := fs.String("data", "", "data directory of the store: calls are journaled there (default: in memory)")
	addr := fs.String("http", "", "serve streamable HTTP on ADDR (host:port) instead of stdio")
	timeout := fs.Duration("timeout", mcp.DefaultTimeout, "how long one tool call may wait for its answer")
	drain := fs.Duration("drain", mcp.DefaultDrain, "stdio: how long calls still running when the input ends may take before they are cancelled")
	idle := fs.Duration("session-idle", mcp.DefaultSessionIdle, "--http: close a session without a request for this long (negative: never)")
	maxSessions := fs.Int("max-sessions", mcp.DefaultMaxSessions, "--http: sessions open at once; past it a new one closes the session idle longest, or is answered 503 when all are in use (negative: no bound)")
	maxPerAddr := fs.Int("max-sessions-per-addr", mcp.DefaultMaxSessionsPerAddr,
		"--http: sessions open at once from one client host; past it a new one closes the host's session idle longest, or is answered 503 when all are in use (negative: no bound)")
	levelName := fs.String("log-level", "warn", "minimum log level: debug, info, warn or error")
	profile := fs.String("profile", "", "security profile of the clients: serve only the listeners it reaches, run calls under it")
	cfgFile := configFlag(fs, "organism.yaml to serve (or give it as the argument)")
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
	level, lerr := parseLogLevel(*levelName)
	if lerr != nil {
		fmt.Fprintf(std.err, "xmlpipe mcp: %v\n", lerr)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: level}))
	src := resolveConfig(pos)
	opts := organism.Options{Logger: logger}
	if *addr == "" {
		// The stdio client is the operator's own: it started this
		// process with the operator's configuration, as the console's
		// user did. Over HTTP anyone who reaches the address is a
		// client, so those stay unauthenticated.
		opts.MetaOperators = []string{mcpFrom}
	}
	var (
		o     *organism.Organism
		err   error
		early *earlyHTTP
	)
	if *addr != "" {
		// The port opens before the organism is built (seconds, with
		// WASM modules): a client connecting at once is held, not refused.
		if early, err = listenMCPHTTP(*addr, std); err != nil {
			fmt.Fprintf(std.err, "xmlpipe mcp: %v\n", err)
			return exitFailure
		}
	}
	if *data != "" {
		o, err = src.durableBuild(*data)(opts)
	} else {
		o, err = src.build(opts)
	}
	if err == nil {
		err = o.Start()
	}
	if err != nil {
		early.fail()
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	if _, err := o.ProfileMask(*profile); err != nil {
		early.fail()
		fmt.Fprintf(std.err, "xmlpipe mcp: --profile: %v\n", err)
		if serr := shutdownMCP(o); serr != nil {
			fmt.Fprintf(std.err, "xmlpipe mcp: %v\n", serr)
		}
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := mcp.New(o.Pump, mcp.Options{From: mcpFrom, Timeout: *timeout, Logger: logger, Profile: *profile, SessionIdle: *idle,
		Version:            currentBuild().Version,
		MaxSessions:        *maxSessions,
		MaxSessionsPerAddr: *maxPerAddr,
		Interim:            o.WatchInterim, // interim text as progress notifications
		Refused:            func(listener string) bool { return o.MetaRefuses(mcpFrom, listener) }})
	defer b.Close()
	if early != nil {
		err = early.serve(ctx, b.HTTPHandler(), logger, b.Close)
	} else {
		// A client that goes away closes the stdout pipe: a write to it
		// must fail (EPIPE), not kill the process by SIGPIPE before the
		// organism shut down and its journal was closed.
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
		err = b.ServeStdio(ctx, std.in, std.out, mcp.StdioOptions{Drain: *drain})
	}
	b.Close() // calls still running end now: their conversations are killed
	if serr := shutdownMCP(o); serr != nil {
		err = errors.Join(err, serr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(std.err, "xmlpipe mcp: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// shutdownMCP shuts the organism down, waiting 10 s at most.
func shutdownMCP(o *organism.Organism) error {
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return o.Shutdown(sctx)
}
