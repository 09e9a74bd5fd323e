package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
)

// Capability defaults.
const (
	DefaultMemoryMB       = 64
	DefaultTimeout        = 5 * time.Second
	DefaultInstances      = 4
	DefaultMaxOutputBytes = 1 << 20
	DefaultMaxDiskBytes   = 64 << 20
	maxStderrBytes        = 4 << 10
)

// Sandbox is what a module may use: memory, time, one directory, some
// environment variables. The zero value means the defaults and nothing else.
type Sandbox struct {
	// MemoryMB caps linear memory (default 64).
	MemoryMB int
	// Timeout bounds one call (default 5s).
	Timeout time.Duration
	// Dir is preopened as /data ("" = no filesystem at all). Every path the
	// guest names resolves beneath it, symbolic links included (see
	// rootFS); only regular files and directories can be opened.
	Dir string
	// DirWritable mounts Dir read-write instead of read-only.
	DirWritable bool
	// MaxDiskBytes caps the disk a writable Dir takes (default 64 MiB):
	// its files and links' targets in whole 4 KiB blocks (a sparse file
	// its whole size) and a block a name (diskquota.Content), those there
	// before counted when the first module writing there is compiled (and
	// again by RecountDisk). One count for the directory, whatever the
	// modules and instances writing there; when modules sharing it ask
	// for different caps, the smallest holds for all. A change past it
	// fails in the guest (see rootFS).
	MaxDiskBytes int
	// Env names the host environment variables the guest sees.
	Env []string
	// Instances is how many instances may exist at once (default 4): idle
	// reactors are kept up to this many, and calls beyond it wait for one.
	Instances int
	// MaxOutputBytes caps the guest's stdout per call (default 1 MiB).
	MaxOutputBytes int
}

func (s Sandbox) withDefaults() Sandbox {
	if s.MemoryMB <= 0 {
		s.MemoryMB = DefaultMemoryMB
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Instances <= 0 {
		s.Instances = DefaultInstances
	}
	if s.MaxOutputBytes <= 0 {
		s.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if s.MaxDiskBytes <= 0 {
		s.MaxDiskBytes = DefaultMaxDiskBytes
	}
	return s
}

// Kind is a module's shape.
type Kind string

// The module shapes.
const (
	// Reactor modules export handle and are pooled.
	Reactor Kind = "reactor"
	// Command modules run _start once per call.
	Command Kind = "command"
)

// Module is a compiled WebAssembly module with its sandbox: compiled once,
// called many times, safe for concurrent use.
type Module struct {
	name    string
	sandbox Sandbox
	rt      wazero.Runtime
	cm      wazero.CompiledModule
	kind    Kind
	env     [][2]string
	// dir is Sandbox.Dir as the guest's /data (nil: no filesystem).
	dir *rootFS
	// countWarned is when (Unix ns) a failed count of dir was last logged.
	countWarned atomic.Int64
	log         *slog.Logger

	idle   chan *instance
	slots  chan struct{} // one per call in progress, Instances at most
	mu     sync.Mutex
	closed bool
}

// Compile compiles wasm with the sandbox's limits. cache (may be nil) is
// shared between modules and, made with wazero.NewCompilationCacheWithDir,
// survives restarts.
func Compile(ctx context.Context, name string, wasm []byte, sb Sandbox, cache wazero.CompilationCache,
	log *slog.Logger) (*Module, error) {
	m, oe := compileModule(ctx, name, wasm, sb, cache, log)
	if oe != nil {
		if oe.Key == "capabilities.dir" {
			return nil, fmt.Errorf("wasm %s: dir: %w", name, oe.Err)
		}
		return nil, fmt.Errorf("wasm %s: %w", name, oe.Err)
	}
	return m, nil
}

// compileModule is Compile with its error an *OptionError naming the
// option it concerns (module, capabilities.dir, capabilities.memory_mb)
// rather than the module: Open's caller names the listener itself.
func compileModule(ctx context.Context, name string, wasm []byte, sb Sandbox, cache wazero.CompilationCache,
	log *slog.Logger) (*Module, *OptionError) {
	sb = sb.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	if err := checkBinary(wasm); err != nil {
		return nil, &OptionError{Key: "module", Err: err}
	}
	if sb.MemoryMB > 4096 {
		return nil, &OptionError{Key: "capabilities.memory_mb",
			Err: fmt.Errorf("memory_mb %d is over the 4096 MiB wasm32 limit", sb.MemoryMB)}
	}
	var dir *rootFS
	if sb.Dir != "" {
		var err error
		if dir, err = openRootFS(sb.Dir, !sb.DirWritable, int64(sb.MaxDiskBytes)); err != nil {
			return nil, &OptionError{Key: "capabilities.dir", Err: err}
		}
		if used := dir.diskUsed(); used > int64(sb.MaxDiskBytes) {
			log.Warn("wasm: dir already holds more than max_disk_bytes: the guest can only shrink it",
				"module", name, "dir", sb.Dir, "used", used, "max_disk_bytes", sb.MaxDiskBytes)
		}
	}
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(uint32(sb.MemoryMB) * 16)
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	m := &Module{name: name, sandbox: sb, rt: rt, dir: dir, log: log, idle: make(chan *instance, sb.Instances),
		slots: make(chan struct{}, sb.Instances)}
	bounded, err := boundModule(wasm, sb.MemoryMB)
	if err != nil {
		return nil, &OptionError{Key: "module", Err: errors.Join(err, m.closeRuntime(ctx))}
	}
	if err := m.compile(ctx, bounded); err != nil {
		return nil, &OptionError{Key: "module", Err: errors.Join(err, m.closeRuntime(ctx))}
	}
	for _, k := range sb.Env {
		if v, ok := os.LookupEnv(k); ok {
			m.env = append(m.env, [2]string{k, v})
		}
	}
	return m, nil
}

func (m *Module) compile(ctx context.Context, wasm []byte) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, m.rt); err != nil {
		return err
	}
	cm, err := m.rt.CompileModule(ctx, wasm)
	if err != nil {
		return err
	}
	m.cm = cm
	for _, f := range cm.ImportedFunctions() {
		mod, fn, _ := f.Import()
		if mod != wasi_snapshot_preview1.ModuleName {
			return fmt.Errorf("%w: %s.%s", ErrImport, mod, fn)
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		return fmt.Errorf("%w: an imported memory", ErrImport)
	}
	ex := cm.ExportedFunctions()
	switch {
	case ex["_start"] != nil:
		m.kind = Command
		if err := abiType("_start", ex["_start"], nil); err != nil {
			return err
		}
	case ex["handle"] != nil:
		m.kind = Reactor
		if err := abiType("handle", ex["handle"], i32); err != nil {
			return err
		}
		if d := ex["describe"]; d != nil {
			if err := abiType("describe", d, i32); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: want handle () -> i32 (a reactor: //go:wasmexport handle in a Go guest built "+
			"with -buildmode=c-shared) or _start () -> () (a WASI command: a main package built without it); %s",
			ErrABI, exportList(ex))
	}
	return nil
}

// Kind reports the module's shape.
func (m *Module) Kind() Kind { return m.kind }

// Exports lists the module's exported function names.
func (m *Module) Exports() []string {
	var out []string
	for n := range m.cm.ExportedFunctions() {
		out = append(out, n)
	}
	return out
}

// Sandbox returns the sandbox with defaults applied.
func (m *Module) Sandbox() Sandbox { return m.sandbox }

// instance is one instantiated module, its stdio and its /data.
type instance struct {
	mod    api.Module
	fn     api.Function
	stdin  *input
	stdout *output
	stderr *output
	// dir is the instance's own view of the module's directory (nil: no
	// filesystem); preopened is how many files it had open once
	// instantiated (/data itself).
	dir       *rootFS
	preopened int64
}

// leftFilesOpen reports whether a call left files open in the instance
// beyond its preopened /data: such an instance is not reused, so that no
// call holds files, or their budget, of the next.
func (inst *instance) leftFilesOpen() bool {
	return inst.dir != nil && inst.dir.openFiles() > inst.preopened
}

func (m *Module) newStdio() (*input, *output, *output) {
	return &input{}, &output{max: m.sandbox.MaxOutputBytes}, &output{max: maxStderrBytes}
}

// moduleConfig configures one instance, with dir (nil: no filesystem) as
// its /data.
func (m *Module) moduleConfig(in *input, out, errOut *output, dir *rootFS) wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().WithName("").WithArgs(m.name).WithStdin(in).WithStdout(out).WithStderr(errOut).
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
	for _, kv := range m.env {
		mc = mc.WithEnv(kv[0], kv[1])
	}
	if dir != nil {
		mc = mc.WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(dir, "/data"))
	}
	return mc
}

// newInstance instantiates a reactor and runs its _initialize.
func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	in, out, errOut := m.newStdio()
	cctx, cancel := context.WithTimeout(ctx, m.sandbox.Timeout)
	defer cancel()
	dir := m.dirView()
	mc := m.moduleConfig(in, out, errOut, dir).WithStartFunctions("_initialize")
	mod, err := m.rt.InstantiateModule(cctx, m.cm, mc)
	if err != nil {
		return nil, m.classify(ctx, "instantiate", err, errOut)
	}
	inst := &instance{mod: mod, fn: mod.ExportedFunction("handle"), stdin: in, stdout: out, stderr: errOut, dir: dir}
	if dir != nil {
		inst.preopened = dir.openFiles()
	}
	return inst, nil
}

// dirView is a new instance's /data: a view of the module's directory with
// a budget of its own (nil: no filesystem).
func (m *Module) dirView() *rootFS {
	if m.dir == nil {
		return nil
	}
	return m.dir.view()
}

func (m *Module) get(ctx context.Context) (*instance, error) {
	select {
	case inst := <-m.idle:
		return inst, nil
	default:
		return m.newInstance(ctx)
	}
}

func (m *Module) put(inst *instance) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		select {
		case m.idle <- inst:
			return
		default:
		}
	}
	_ = inst.mod.Close(context.Background())
}

// Call runs the guest on one input payload and returns its output.
func (m *Module) Call(ctx context.Context, in []byte) ([]byte, error) {
	return m.call(ctx, "handle", in)
}

// Describe calls the reactor's describe export and returns what it wrote;
// ok is false when the module has none.
func (m *Module) Describe(ctx context.Context) (out []byte, ok bool, err error) {
	if m.kind != Reactor || m.cm.ExportedFunctions()["describe"] == nil {
		return nil, false, nil
	}
	out, err = m.call(ctx, "describe", nil)
	return out, true, err
}

func (m *Module) call(ctx context.Context, export string, in []byte) (_ []byte, err error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if m.dir != nil { // a call writing to the dir: no recount meanwhile
		defer m.enterDir()()
	}
	select { // bound the live instances (memory: Instances × memory_mb)
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("wasm: waiting for an instance: %w", ctx.Err())
	}
	if m.kind == Command {
		return m.runCommand(ctx, in)
	}
	inst, err := m.get(ctx)
	if err != nil {
		return nil, err
	}
	defer m.noteQuota(inst.dir, &err)()
	fn := inst.fn
	if export != "handle" {
		fn = inst.mod.ExportedFunction(export)
	}
	inst.stdin.reset(in)
	inst.stdout.reset()
	inst.stderr.reset()
	cctx, cancel := context.WithTimeout(ctx, m.sandbox.Timeout)
	res, err := fn.Call(cctx)
	// A trapped or interrupted instance is not reused; nor is one whose
	// context ended while it ran, even if it returned: wazero closes such
	// an instance, possibly just after the call.
	// Nor is one the call left files open in (closing them under the
	// guest would leave it descriptors that a later open reuses).
	switch {
	case err != nil || cctx.Err() != nil:
		cancel()
		_ = inst.mod.Close(context.Background())
		if err != nil {
			return nil, m.classify(ctx, export, err, inst.stderr)
		}
	case inst.leftFilesOpen():
		cancel()
		m.log.Debug("wasm: instance dropped: the call left files open", "module", m.name,
			"open", inst.dir.openFiles()-inst.preopened)
		_ = inst.mod.Close(context.Background())
	default:
		cancel()
		defer m.put(inst)
	}
	if inst.stdout.over {
		return nil, fmt.Errorf("%w (%d bytes)", ErrOutputTooLarge, m.sandbox.MaxOutputBytes)
	}
	if code := int32(res[0]); code != 0 {
		return nil, fmt.Errorf("%w: %s returned %d: %s", ErrFailed, export, code, stderrText(inst.stderr))
	}
	return bytes.Clone(inst.stdout.b), nil
}

// runCommand instantiates a command module for one call.
func (m *Module) runCommand(ctx context.Context, in []byte) (_ []byte, err error) {
	stdin, out, errOut := m.newStdio()
	stdin.reset(in)
	cctx, cancel := context.WithTimeout(ctx, m.sandbox.Timeout)
	defer cancel()
	dir := m.dirView()
	defer m.noteQuota(dir, &err)()
	mod, err := m.rt.InstantiateModule(cctx, m.cm, m.moduleConfig(stdin, out, errOut, dir))
	if mod != nil {
		defer mod.Close(context.Background())
	}
	var exit *sys.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
		return nil, m.classify(ctx, "_start", err, errOut)
	}
	if out.over {
		return nil, fmt.Errorf("%w (%d bytes)", ErrOutputTooLarge, m.sandbox.MaxOutputBytes)
	}
	return out.b, nil
}

// noteQuota is deferred around a call whose /data is dir (nil: none): the
// function it returns, should the disk quota have refused a change during
// the call, logs it and, when the call failed, wraps *err with
// ErrDiskQuota, since the guest itself could only be told EIO.
func (m *Module) noteQuota(dir *rootFS, err *error) func() {
	if dir == nil || dir.quota == nil {
		return func() {}
	}
	before := dir.quotaRefusals()
	return func() {
		n := dir.quotaRefusals() - before
		if n == 0 {
			return
		}
		used, limit := dir.diskUsed(), dir.quota.Limit()
		m.log.Warn("wasm: the guest's dir is at its disk quota", "module", m.name, "refused", n,
			"used", used, "max_disk_bytes", limit)
		if *err != nil {
			*err = fmt.Errorf("%w (max_disk_bytes %d, %d used; %d changes refused): %w",
				ErrDiskQuota, limit, used, n, *err)
		}
	}
}

// classify maps a wazero error to one of the package's errors. ctx is the
// caller's context: a guest interrupted because it ended (cancelled, or the
// caller's own deadline) is told apart from one stopped at the sandbox's
// deadline (ErrTimeout).
func (m *Module) classify(ctx context.Context, what string, err error, stderr *output) error {
	msg := stderrText(stderr)
	var exit *sys.ExitError
	interrupted := errors.As(err, &exit) &&
		(exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled)
	switch {
	case m.isClosed() && (exit == nil || exit.ExitCode() == closedExitCode):
		return fmt.Errorf("%w: %s interrupted (the listener stopped or was replaced)", ErrClosed, what)
	case interrupted && ctx.Err() != nil:
		return fmt.Errorf("wasm: %s interrupted: %w", what, context.Cause(ctx))
	case interrupted:
		return fmt.Errorf("%w (%s after %s)", ErrTimeout, what, m.sandbox.Timeout)
	case strings.Contains(msg, "out of memory"):
		return fmt.Errorf("%w (%d MiB): %s", ErrMemory, m.sandbox.MemoryMB, msg)
	case errors.As(err, &exit) && m.kind == Reactor && what != "instantiate":
		return fmt.Errorf("%w with status %d in %s: a reactor's %s returns its status (return 0) instead of "+
			"exiting (os.Exit ends the instance; stderr says why it fails): %s", ErrExit, exit.ExitCode(), what, what, msg)
	case errors.As(err, &exit):
		return fmt.Errorf("%w with status %d in %s: %s", ErrExit, exit.ExitCode(), what, msg)
	default:
		return fmt.Errorf("%w in %s: %v: %s", ErrTrap, what, err, msg)
	}
}

func stderrText(w *output) string {
	s := strings.TrimSpace(string(w.b))
	if s == "" {
		return "(no message)"
	}
	if i := strings.IndexByte(s, '\n'); i > 0 && len(s) > 200 {
		s = s[:i] // the first line (a Go runtime's fatal error) says it
	}
	return s
}

// closedExitCode is the exit status a guest running when its module is
// closed is stopped with: not 0, so an interrupted command module is never
// taken for one that finished (wazero's Runtime.Close would use 0).
const closedExitCode = 0xdfffffff

// isClosed reports whether Close was called.
func (m *Module) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Close closes every instance and the runtime; a guest running then is
// interrupted, and its call fails with ErrClosed.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	for {
		select {
		case inst := <-m.idle:
			_ = inst.mod.Close(ctx)
		default:
			return m.closeRuntime(ctx)
		}
	}
}

// closeRuntime closes the runtime (every instance left) and then the
// directory.
func (m *Module) closeRuntime(ctx context.Context) error {
	err := m.rt.CloseWithExitCode(ctx, closedExitCode)
	if m.dir != nil {
		err = errors.Join(err, m.dir.Close())
	}
	return err
}

// enterDir records a call that may write to the module's dir starting (see
// diskQuota.enter); the function it returns records its end. A stale count
// that fails is logged and kept.
func (m *Module) enterDir() func() {
	end, err := m.dir.enter()
	if err != nil {
		now := time.Now().UnixNano()
		if last := m.countWarned.Load(); now-last >= int64(diskquota.MaxAge) && m.countWarned.CompareAndSwap(last, now) {
			m.log.Warn("wasm: the dir's disk quota was not recounted; the count is kept (logged once a minute)",
				"module", m.name, "err", err)
		}
	}
	return end
}

// RecountDisk counts the module's writable dir afresh for its disk quota
// (what others added or removed there since it was counted included),
// unless a call of a module writing there runs, when the count is kept;
// recounted reports which. A module without a writable dir has nothing to
// count.
func (m *Module) RecountDisk() (recounted bool, err error) {
	if m.dir == nil {
		return false, nil
	}
	if recounted, err = m.dir.recount(); err != nil {
		return false, fmt.Errorf("wasm %s: dir: %w", m.name, err)
	}
	return recounted, nil
}

// Check instantiates a reactor (running its _initialize) to prove the module
// starts within its sandbox; the instance joins the pool. A command module
// cannot be started without running it, so Check does nothing more for it
// than Compile did.
func (m *Module) Check(ctx context.Context) error {
	if m.kind != Reactor {
		return nil
	}
	if m.dir != nil { // _initialize may write to the dir
		defer m.enterDir()()
	}
	inst, err := m.newInstance(ctx)
	if err != nil {
		return err
	}
	m.put(inst)
	return nil
}
