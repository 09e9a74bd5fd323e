package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// runConsole is `xmlpipe console [--verbose] [organism.yaml]`: the line
// console over an in-process organism (no network listener), or with
// `--connect https://host:8765 [--fingerprint F]` over a running organism's
// main bus (see connectConsole).
func runConsole(ctx context.Context, args []string, std streams) int {
	fs := newFlags("console", "[--verbose] [--data DIR] [organism.yaml] | --connect URL [--fingerprint SHA256]", std.err)
	verbose := fs.Bool("verbose", false, "show failure diagnostics and informational logs")
	data := dataFlag(fs)
	connect := fs.String("connect", "", "attach to a running organism's main bus (https://host:8765) instead")
	fingerprint := fs.String("fingerprint", "", "with --connect: the SHA-256 fingerprint xmlpipe run printed (self-signed certificates)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *connect != "" {
		if len(pos) > 0 || *data != "" {
			fmt.Fprintln(std.err, "xmlpipe console: --connect takes no organism.yaml or --data")
			return exitUsage
		}
		return connectConsole(ctx, *connect, *fingerprint, *verbose, std)
	}
	if *fingerprint != "" {
		fmt.Fprintln(std.err, "xmlpipe console: --fingerprint needs --connect")
		return exitUsage
	}
	if !wantArgs(fs, pos, 0, 1) {
		return exitUsage
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logs := &switchWriter{w: std.err}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	env := catalog.Env{} // no LLM layer is compiled in yet: the greeter uses its template
	src := resolveConfig(pos)
	b, err := console.Assemble(organism.Options{Logger: logger, Env: env}, src.durableBuild(*data))
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	con, err := console.New(b, console.Config{Verbose: *verbose, NoLLM: env.LLM == nil})
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	logs.set(con)
	defer logs.set(std.err)
	o := b.Organism()
	if err := o.Start(); err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if in, ok := std.in.(*os.File); ok {
		if out, ok := std.out.(*os.File); ok {
			err = con.RunStdio(ctx, in, out)
		} else {
			err = con.Run(ctx, in, std.out)
		}
	} else {
		err = con.Run(ctx, std.in, std.out)
	}
	logs.set(std.err)
	code = exitOK
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(std.err, err)
		code = exitFailure
	}
	if err := o.Shutdown(context.Background()); err != nil {
		fmt.Fprintln(std.err, err)
		code = exitFailure
	}
	return code
}

// switchWriter is an io.Writer whose destination can change: logs go to
// stderr until the console exists, then through it (so they never garble
// the prompt), then to stderr again.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
