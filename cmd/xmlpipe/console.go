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

// runConsole is `xmlpipe console [--verbose] [--reply-timeout D]
// [--line-wait D] [organism.yaml]`: the line
// console over an in-process organism, which opens no network listener
// unless --serve is given — then the console also serves the organism's
// main bus exactly as `xmlpipe run` does (see consoleServe). With
// `--connect https://host:8765 [--fingerprint F]` it attaches to a running
// organism's main bus instead (see connectConsole).
func runConsole(ctx context.Context, args []string, std streams) int {
	fs := newFlags("console", consoleArgs, std.err)
	verbose := fs.Bool("verbose", false, "show failure diagnostics and informational logs")
	logFormat := logFormatFlag(fs)
	data := dataFlag(fs)
	serve := fs.Bool("serve", false, "also serve the main bus (HTTPS+WSS, as xmlpipe run does, reload through its API) on this organism")
	listen := fs.String("listen", "", "with --serve: serve the main bus on ADDR (host:port) instead of organism.bind:organism.port (default 127.0.0.1:8765)")
	insecure := fs.Bool("insecure-dev", false, "with --serve: plain HTTP and no authentication (every client is an admin): local development only, loopback addresses only")
	connect := fs.String("connect", "", "attach to a running organism's main bus (https://host:8765) instead")
	fingerprint := fs.String("fingerprint", "", "with --connect: the SHA-256 fingerprint xmlpipe run printed (self-signed certificates)")
	replyTimeout := fs.Duration("reply-timeout", console.DefaultReplyTimeout,
		"piped input: how long the session waits, at /quit or the end of input, for each conversation it started")
	lineWait := fs.Duration("line-wait", console.DefaultLineWait,
		"piped input: how long to wait after an @ line before reading the next (slower answers print later)")
	cfgFile := configFlag(fs, "organism.yaml to run (or give it as the argument)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if pos, ok = configPos(fs, pos, *cfgFile); !ok {
		return exitUsage
	}
	cfg := console.Config{Verbose: *verbose, ReplyTimeout: *replyTimeout, LineWait: *lineWait}
	if err := cfg.Validate(); err != nil || *replyTimeout == 0 || *lineWait == 0 {
		fmt.Fprintln(std.err, "xmlpipe console: --reply-timeout and --line-wait must be positive")
		return exitUsage
	}
	if *connect != "" {
		if len(pos) > 0 || *data != "" || *serve {
			fmt.Fprintln(std.err, "xmlpipe console: --connect takes no organism.yaml, --data or --serve")
			return exitUsage
		}
		return connectConsole(ctx, *connect, *fingerprint, cfg, std)
	}
	if *fingerprint != "" {
		fmt.Fprintln(std.err, "xmlpipe console: --fingerprint needs --connect")
		return exitUsage
	}
	if !*serve && (*listen != "" || *insecure) {
		fmt.Fprintln(std.err, "xmlpipe console: --listen and --insecure-dev need --serve")
		return exitUsage
	}
	if err := checkListen(*listen, *insecure); err != nil {
		fmt.Fprintf(std.err, "xmlpipe console: %v\n", err)
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
	logger, err := newLogger(logs, *logFormat, level)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe console: %v\n", err)
		return exitUsage
	}
	env := catalog.Env{} // the organism fills in LLM when a backend is usable
	src := resolveConfig(pos)
	b, err := organism.Assemble(organism.Options{Logger: logger, Env: env}, src.durableBuild(*data))
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	o := b.Organism()
	cfg.NoLLM = o.LLM == nil && hasLocalGreeter(o)
	con, err := console.New(b, cfg)
	if err != nil {
		fmt.Fprintln(std.err, err)
		_ = o.Shutdown(context.Background())
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var srv *consoleServe
	if *serve {
		srv = &consoleServe{r: &serveRunner{src: src, data: *data, listen: *listen, insecure: *insecure, log: logger,
			std: std, flags: runFlagsFor(pos, *data)}}
		defer srv.close()
		if err := srv.prepare(ctx, o); err != nil {
			fmt.Fprintf(std.err, "xmlpipe console: %v\n", err)
			if err := o.Shutdown(context.Background()); err != nil {
				fmt.Fprintln(std.err, err)
			}
			return exitFailure
		}
	}
	// From here on log lines go through the console (they must not tear
	// its prompt); what preparing the bus warned of — no user can log in
	// — went to standard error, as xmlpipe run says it.
	logs.set(con)
	defer logs.set(std.err)
	if err := o.Start(); err != nil {
		fmt.Fprintln(std.err, err)
		_ = o.Shutdown(context.Background())
		return exitFailure
	}
	code = exitOK
	if srv != nil {
		if err := srv.start(b, cancel); err != nil {
			fmt.Fprintf(std.err, "xmlpipe console: %v\n", err)
			if err := o.Shutdown(context.Background()); err != nil {
				fmt.Fprintln(std.err, err)
			}
			return exitFailure
		}
	}
	// A reader of the output that goes away (| head) closes the pipe: a
	// write must fail (EPIPE) and end the session, not kill the process by
	// SIGPIPE before the organism shut down and its journal was closed.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
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
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(std.err, err)
		code = exitFailure
	}
	if srv != nil {
		if err := srv.shutdown(); err != nil {
			fmt.Fprintf(std.err, "xmlpipe console: main bus: %v\n", err)
			code = exitFailure
		}
	}
	// A graceful stop, cut once the pump's drain time ran out: a handler
	// that ignores its deadline (a spinning WASM guest) is interrupted.
	cut := cutDrain(logger, o, o.Pump.ShutdownTimeout())
	defer cut.Stop()
	if err := o.Shutdown(context.Background()); err != nil {
		fmt.Fprintln(std.err, err)
		code = exitFailure
	}
	return code
}

// consoleArgs is the usage line of `xmlpipe console`.
const consoleArgs = "[--verbose] [--reply-timeout 10m] [--line-wait 10s] [--log-format text|json] [--data DIR] " +
	"[--serve [--listen ADDR] [--insecure-dev]] [organism.yaml] | --connect URL [--fingerprint SHA256]"

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

// hasLocalGreeter reports a greeter that runs here (the no-LLM note is
// about it; a greeter imported through a gateway greets on its peer).
func hasLocalGreeter(o *organism.Organism) bool {
	l, ok := o.Pump.Lookup("greeter")
	return ok && !l.Remote
}
