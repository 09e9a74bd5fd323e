// Package command is the run_command tool: a program from the allow-list
// (empty = nothing), run without a shell, with a timeout that kills its
// whole process group, capped output and only the allowed environment.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "run_command"

// Defaults.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxBytes = 64 << 10
)

// Refusals.
var (
	ErrNotAllowed = errors.New("run_command: command not in the allow-list (tool_config.run_command.allowed_commands)")
	ErrEmpty      = errors.New("run_command: empty command")
	ErrNotFound   = errors.New("run_command: command not found")
)

// Tool is the run_command listener.
type Tool struct {
	// Policy gives the allow-list and limits for a caller.
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

// Handle runs the command and answers the caller.
func (t *Tool) Handle(ctx context.Context, p *RunCommand, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	var c tools.Config
	if t.Policy != nil {
		c = t.Policy.Config(md.From, Name)
	}
	res := &RunCommandResult{Command: p.Command, ExitCode: -1}
	if err := run(ctx, c, p, res); err != nil {
		res.Error = err.Error()
	}
	return tools.Answer(t.Callers, md, res), nil
}

// allowed resolves the command against the allow-list: an entry is a program
// name (looked up in PATH) or an absolute path; the command must name it
// exactly (by name or by the same absolute path).
func allowed(list []string, cmd string) (string, error) {
	if strings.TrimSpace(cmd) == "" {
		return "", ErrEmpty
	}
	for _, entry := range list {
		if entry != cmd {
			continue
		}
		if filepath.IsAbs(entry) {
			return entry, nil
		}
		if strings.ContainsRune(entry, filepath.Separator) {
			break // relative paths are never allowed
		}
		path, err := exec.LookPath(entry)
		if err != nil {
			return "", fmt.Errorf("%w: %s", ErrNotFound, cmd)
		}
		return path, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNotAllowed, cmd)
}

// capped is a writer keeping the first max bytes.
type capped struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room < len(p) {
		w.truncated = true
		if room > 0 {
			w.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return w.buf.Write(p)
}

func run(ctx context.Context, c tools.Config, p *RunCommand, res *RunCommandResult) error {
	path, err := allowed(c.AllowedCommands, p.Command)
	if err != nil {
		return err
	}
	timeout := tools.Or(c.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, p.Args...)
	cmd.Args[0] = p.Command
	cmd.Env = []string{}
	for _, k := range c.Env {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Dir = os.TempDir()
	if p.Stdin != "" {
		cmd.Stdin = strings.NewReader(p.Stdin)
	}
	maxBytes := tools.Or(c.MaxBytes, DefaultMaxBytes)
	stdout, stderr := &capped{max: maxBytes}, &capped{max: maxBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the whole group
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	res.Stdout, res.Stderr = tools.Text(stdout.buf.Bytes()), tools.Text(stderr.buf.Bytes())
	res.Truncated = stdout.truncated || stderr.truncated
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
		return fmt.Errorf("run_command: timed out after %s", timeout)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		return nil
	case err != nil:
		return fmt.Errorf("run_command: %w", err)
	}
	res.ExitCode = 0
	return nil
}
