package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateWait is how long closing a command server's connection waits,
// after closing its stdin, before SIGTERM (and as long again before
// SIGKILL).
const terminateWait = time.Second

// groupTransport starts a command server in a process group of its own,
// and when its connection closes — the mount closing, or the server
// breaking the connection, after which the SDK closes it — the whole group
// is killed once the server has been stopped as the MCP spec says (stdin
// closed, then SIGTERM, then SIGKILL); so is it as soon as the server
// exits (watchExit). Whatever the server started (npx's node, a shell's
// background jobs) dies with it instead of outliving it, one more at every
// restart. The lines the server writes on its stdout that are no JSON-RPC
// message are skipped and logged (see jsonLines), as the TypeScript SDK
// skips them.
type groupTransport struct {
	cmd    *exec.Cmd
	server string // the mount's name, for the log
	log    *slog.Logger

	// progress receives the server's progress notifications.
	progress *progressRoutes

	mu      sync.Mutex
	skips   int    // lines skipped
	example string // the first line skipped
}

func newGroupTransport(cmd *exec.Cmd, server string, log *slog.Logger, progress *progressRoutes) *groupTransport {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &groupTransport{cmd: cmd, server: server, log: log, progress: progress}
}

// Connect implements sdk.Transport: it starts the server.
func (t *groupTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	pgid := t.cmd.Process.Pid
	go watchExit(pgid)
	out := io.NopCloser(newJSONLines(stdout, sdk.DefaultMaxLineLength, t.skipped))
	c, err := (&sdk.IOTransport{Reader: out, Writer: &serverInput{cmd: t.cmd, stdin: stdin}}).Connect(ctx)
	if err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = t.cmd.Wait()
		return nil, err
	}
	return &groupConn{Connection: progressConn{Connection: c, routes: t.progress}, pgid: pgid}, nil
}

// skipped logs a line of the server's stdout that is no JSON-RPC message
// (the first ones, then one in a thousand).
func (t *groupTransport) skipped(line []byte, n int) {
	t.mu.Lock()
	t.skips = n
	if t.example == "" {
		t.example = quoted(string(line))
	}
	t.mu.Unlock()
	if n <= 10 || n%1000 == 0 {
		t.log.Warn("mcp: the server wrote a line that is no JSON-RPC message on its stdout; skipped (a server logs to stderr)",
			"server", t.server, "line", quoted(string(line)), "skipped", n)
	}
}

// strayOutput says what the server wrote on its stdout that is no JSON-RPC
// ("" when nothing): a command that is no MCP server shows itself so.
func (t *groupTransport) strayOutput() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.skips {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("it wrote 1 line that is no JSON-RPC on its stdout: %q", t.example)
	}
	return fmt.Sprintf("it wrote %d lines that are no JSON-RPC on its stdout, the first %q", t.skips, t.example)
}

// serverInput is a command server's stdin; closing it stops the server:
// its stdin closed, then, if it has not exited within terminateWait,
// SIGTERM, then as long again and SIGKILL.
type serverInput struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func (s *serverInput) Write(p []byte) (int, error) { return s.stdin.Write(p) }

func (s *serverInput) Close() error {
	if err := s.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(terminateWait)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive server process")
}

// groupConn is a command server's connection that kills the server's
// process group when it closes.
type groupConn struct {
	sdk.Connection
	pgid int
	once sync.Once
}

// Close implements sdk.Connection: the server is stopped (stdin closed,
// then SIGTERM, then SIGKILL), then what is left of its group is killed.
func (c *groupConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(func() { _ = syscall.Kill(-c.pgid, syscall.SIGKILL) })
	return err
}
