// Package command is the run_command tool: a program from the allow-list
// (empty = nothing) with arguments its entry declares (none unless
// declared), run without a shell and without the organism's privileges: as
// the run_as user when the organism is root (never root; the data
// directory must be closed to it), in a private empty working directory,
// with only the allowed environment and a fixed PATH, under a timeout that
// kills its whole process group, with capped output. The process group is
// also killed when the program exits, so nothing it sent to the background
// outlives the call. An organism running as root also runs each program in
// a PID namespace of its own, so a child that leaves the group (setsid)
// dies with it too; without root, such a child survives: confine those
// programs by not allowing them.
//
// An entry is a program name (it then takes no arguments at all) or a
// program with argument patterns. A pattern is a literal ("-l": exactly
// that argument) or a literal prefix followed by one placeholder:
//
//	{file}  an existing regular file inside allowed_paths, named as the
//	        files tool names it (the program gets its real path)
//	{dir}   an existing directory inside allowed_paths, likewise
//	{text}  text that is neither an option nor a path: it does not begin
//	        with "-", holds no "/" and is not "." or ".."
//	{int}   a non-negative decimal integer
//
// Every argument of a call must match some pattern of the entry; so an
// option ("-f", "--set=…") is possible only when declared, and a path only
// through {file}/{dir}, confined like the files tool. Everything is checked
// before any process starts.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Name is the tool's name in tools: and tool_config:.
const Name = "run_command"

// Defaults.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxBytes = 64 << 10
)

// MaxCarried bounds stdout and stderr together, counted as the answer
// carries them (tools.CarriedSize: escaped): it keeps the answer under the
// pump's default message size cap when max_bytes is set higher.
const MaxCarried = stage.DefaultMaxBytes - 64<<10

// Tool is the run_command listener.
type Tool struct {
	// Policy gives the allow-list and limits for a caller.
	Policy tools.Policy
	// Callers lets an answer reach a caller that takes another payload
	// (an agent takes text); nil: answer in the result type.
	Callers tools.Callers
}

// Check is the load-time check of a run_command tool_config entry: the
// allow-list parses, its programs exist in SafePath (or at their absolute
// path), {file}/{dir} patterns have roots to lie in and those roots are
// sound, run_as names an unprivileged user (and is not self for an
// organism running as root, which every call would refuse), and env does
// not try to pass PATH.
func Check(c tools.Config) error { return check(c, os.Geteuid()) }

// check is Check for an organism running as euid.
func check(c tools.Config, euid int) error {
	entries, err := parseEntries(c)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := lookPath(e.name); err != nil {
			return err
		}
	}
	if len(c.AllowedPaths) > 0 {
		if err := tools.CheckRoots(c.AllowedPaths, c.DataDir); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	id, err := parseRunAs(c.RunAs)
	if err != nil {
		return err
	}
	if id.self && euid == 0 {
		return errSelfAsRoot
	}
	for _, k := range c.Env {
		if k == "PATH" {
			return fmt.Errorf("%w: env: PATH is fixed (%s) and cannot be passed", ErrConfig, SafePath)
		}
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: env: %q is not a variable name", ErrConfig, k)
		}
	}
	return nil
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

// errOwnTimeout is the cause a program's context ends with at the tool's
// own timeout (told apart from the caller's context ending).
var errOwnTimeout = errors.New("run_command timeout")

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

// environ is the program's environment: the fixed PATH and the env
// variables the organism has.
func environ(names []string) []string {
	env := []string{"PATH=" + SafePath}
	seen := map[string]bool{"PATH": true}
	for _, k := range names {
		if seen[k] || k == "" || strings.ContainsAny(k, "=\x00") {
			continue
		}
		seen[k] = true
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func run(ctx context.Context, c tools.Config, p *RunCommand, res *RunCommandResult) error {
	path, args, err := resolve(c, p.Command, p.Args)
	if err != nil {
		return err
	}
	id, err := parseRunAs(c.RunAs)
	if err != nil {
		return err
	}
	cred, err := id.credential(os.Geteuid(), c.DataDir)
	if err != nil {
		return err
	}
	dir, err := workDir(cred)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	timeout := tools.Or(c.Timeout, DefaultTimeout)
	caller := ctx // ends when the call is killed, halted or its handler's deadline passes
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errOwnTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Args[0] = p.Command
	cmd.Env = environ(c.Env)
	cmd.Dir = dir
	if p.Stdin != "" {
		cmd.Stdin = strings.NewReader(p.Stdin)
	}
	maxBytes := tools.Or(c.MaxBytes, DefaultMaxBytes)
	stdout, stderr := &capped{max: maxBytes}, &capped{max: maxBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	isolate(cmd.SysProcAttr)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the whole group
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run_command: %w", err)
	}
	defer invalidateRoots(c.AllowedPaths)
	// Once the program has exited, nothing it started in its group may
	// outlive the call (a child sent to the background, holding the
	// output pipes or not): the group is killed before the program is
	// reaped, while its pid still names only that group.
	awaitExit(cmd.Process.Pid)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	err = cmd.Wait()
	// Each output, escaped as the answer carries it, gets half of what
	// keeps the answer under the message size cap, whatever max_bytes says.
	var cutOut, cutErr bool
	res.Stdout, cutOut = tools.CutCarried(tools.Text(stdout.buf.Bytes()), MaxCarried/2)
	res.Stderr, cutErr = tools.CutCarried(tools.Text(stderr.buf.Bytes()), MaxCarried/2)
	res.Truncated = stdout.truncated || stderr.truncated || cutOut || cutErr
	switch {
	case errors.Is(context.Cause(ctx), errOwnTimeout):
		res.TimedOut = true
		return fmt.Errorf("run_command: timed out after %s", timeout)
	case caller.Err() != nil:
		// Not the tool's timeout: the caller's own context ended first (the
		// handler's deadline, a kill or halt), and the program was killed.
		res.TimedOut = errors.Is(caller.Err(), context.DeadlineExceeded)
		return fmt.Errorf("run_command: stopped before its %s timeout: %w", timeout, context.Cause(caller))
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

// invalidateRoots marks the disk-use figures of the roots a program may
// have written to (its allowed_paths) stale, once it has ended: the next
// writer with a disk quota there (files, a WASM guest) counts the root
// afresh before its change, so what the program added is counted.
func invalidateRoots(paths []string) {
	roots, err := tools.Roots(paths)
	if err != nil {
		return // no roots: nothing of theirs is counted
	}
	for _, r := range roots {
		diskquota.Invalidate(r.Dir)
	}
}
