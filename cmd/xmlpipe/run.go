package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// runRun is `xmlpipe run [--log-level L] [organism.yaml]`: the organism
// headless, logging to stderr, until SIGINT or SIGTERM, then a graceful
// shutdown that drains in-flight messages.
func runRun(ctx context.Context, args []string, std streams) int {
	fs := newFlags("run", "[--log-level L] [--data DIR] [organism.yaml]", std.err)
	levelName := fs.String("log-level", "info", "minimum log level: debug, info, warn or error")
	data := dataFlag(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 0, 1) {
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*levelName)); err != nil {
		fmt.Fprintf(std.err, "xmlpipe run: --log-level: %v\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: level}))
	src := resolveConfig(pos)
	env := catalog.Env{Print: func(_, from, text string) {
		logger.Info("output", "from", from, "text", text)
	}}
	o, err := src.durableBuild(*data)(organism.Options{Logger: logger, Env: env})
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.Start(); err != nil {
		logger.Error("start", "error", err)
		return exitFailure
	}
	logger.Info("organism running", "organism", o.Config.Organism.Name, "config", src.path,
		"listeners", len(o.Pump.Listeners()))
	<-ctx.Done()
	stop()
	logger.Info("shutting down: draining in-flight messages")
	if err := o.Shutdown(context.Background()); err != nil {
		logger.Error("shutdown", "error", err)
		return exitFailure
	}
	logger.Info("stopped")
	return exitOK
}
