// Package mcpclient mounts an external MCP server's tools as listeners
// (type: mcp in organism.yaml): each tool becomes a listener named
// <mount>.<tool> whose payload type is derived from the tool's JSON input
// schema (see payloadStruct), and whose handler calls the tool with exactly
// the arguments the payload holds and answers the caller with a ToolResult
// that keeps every kind of content.
//
// A server that exits (or whose connection breaks) is restarted in the
// background with exponential backoff; meanwhile its tools answer at once
// with an Error saying the server exited. Close never fails on a dead
// server and returns within a few seconds whatever the server does.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/gen"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one tool call (and one connection attempt).
	DefaultTimeout = 30 * time.Second
	// DefaultRestartMin is the first wait before restarting a server.
	DefaultRestartMin = 500 * time.Millisecond
	// DefaultRestartMax caps the wait between restarts.
	DefaultRestartMax = 30 * time.Second
)

// closeWait bounds how long Close waits for the server to go.
const closeWait = 3 * time.Second

// Errors.
var (
	ErrServer = errors.New("mcp: external server")
	ErrTool   = errors.New("mcp: tool call failed")
	// ErrExited: the server exited or its connection broke; it is being
	// restarted.
	ErrExited = errors.New("server exited")
	// ErrClosed: the mount was closed (the organism is shutting down).
	ErrClosed = errors.New("mount closed")
	// ErrNoAnswer: the server did not answer a call within the mount's
	// Timeout (the call is cancelled on the server).
	ErrNoAnswer = errors.New("no answer within the timeout")
	// ErrToolNameTaken: a tool is not mounted because its listener name
	// is taken by another tool of the server: one of the same name listed
	// again, or one whose name differs only in case (listener names are
	// compared case-insensitively).
	ErrToolNameTaken = errors.New("listener name taken")
)

// Options name the external server.
type Options struct {
	// Name is the mount's name: tools become listeners <Name>.<tool>.
	Name string
	// Command starts a stdio server (argv); or URL is a streamable HTTP endpoint.
	Command []string
	URL     string
	// Env lists the host variables passed to Command (default none).
	Env []string
	// Network declares the addresses ("host:port", host "*" or "*.domain",
	// port "*") the server dials itself: a call is refused unless the
	// calling thread's profile allows each (see checkNetwork). nil: not
	// declared — a local server may then dial any address; empty: none.
	Network []string
	// Timeout bounds one call and one connection attempt (default 30s).
	Timeout time.Duration
	// RestartMin and RestartMax bound the wait before restarting a server
	// that exited: it doubles from RestartMin up to RestartMax, with ±20%
	// jitter (defaults DefaultRestartMin, DefaultRestartMax).
	RestartMin, RestartMax time.Duration
	Logger                 *slog.Logger
	// Callers lets a result reach a caller that takes another payload (an
	// agent takes text); nil: answer with ToolResult.
	Callers tools.Callers
	// Progress, when set, is told the server's progress notifications of
	// each call — their message, else how far the call got — with the
	// thread of the message that made the call (xmlpipe mcp relays them to
	// its client as that call's progress); nil: calls ask for none.
	Progress func(thread, listener, text string)
}

// Tool is one mounted tool.
type Tool struct {
	// Listener is the listener name (<mount>.<tool>), also the payload root.
	Listener    string
	Description string
	Payload     *xmlpipe.PayloadType
	Handler     xmlpipe.Handler
}

// Mount is a connection to an external server and its tools.
type Mount struct {
	o     Options
	tools []Tool
	names []string // the tools' names, sorted (to name what a changed server changed)
	// listed is the tool list the tools were mounted from (see
	// toolList), to notice a server that offers another.
	listed string
	// listChanged receives the server's notifications/tools/list_changed
	// (buffered 1).
	listChanged chan struct{}
	// stale is set once the server offers another tool list than the
	// mounted one (Stale).
	stale atomic.Bool
	// progress routes the server's progress notifications to the calls.
	progress *progressRoutes

	ctx  context.Context // ends at Close: stops connection attempts
	stop context.CancelFunc
	done chan struct{} // the supervisor has returned

	mu      sync.Mutex
	session *sdk.ClientSession // nil while the server is down
	down    error              // why, while it is
	broken  chan struct{}      // a call saw the connection fail (buffered 1)
	closed  bool
}

// Connect starts or reaches the server, lists its tools and derives their
// payload types. Tools whose schema has no XML form are skipped (logged).
func Connect(ctx context.Context, o Options) (*Mount, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RestartMin <= 0 {
		o.RestartMin = DefaultRestartMin
	}
	if o.RestartMax < o.RestartMin {
		o.RestartMax = max(DefaultRestartMax, o.RestartMin)
	}
	if len(o.Command) == 0 && o.URL == "" {
		return nil, fmt.Errorf("%w %s: give command or url", ErrServer, o.Name)
	}
	listChanged, progress := make(chan struct{}, 1), &progressRoutes{}
	cs, err := dial(ctx, o, listChanged, progress)
	if err != nil {
		return nil, err
	}
	m := &Mount{o: o, session: cs, done: make(chan struct{}), broken: make(chan struct{}, 1), listChanged: listChanged,
		progress: progress}
	m.ctx, m.stop = context.WithCancel(context.Background())
	lctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// Listener names are compared case-insensitively, MCP tool names are
	// not: of tools whose names differ only in case the first is mounted.
	mounted := map[string]string{} // lower-cased listener name → tool name
	var listed []*sdk.Tool
	for tool, err := range cs.Tools(lctx, nil) {
		if err != nil {
			m.stop()
			return nil, errors.Join(fmt.Errorf("%w %s: list tools: %w", ErrServer, o.Name, err), closeSession(cs, o.Logger))
		}
		listed = append(listed, tool)
		m.names = append(m.names, tool.Name)
		t, err := m.mountTool(tool)
		if other, dup := mounted[strings.ToLower(t.Listener)]; err == nil && dup {
			err = fmt.Errorf("%w: its name differs from tool %q's only in case", ErrToolNameTaken, other)
			if other == tool.Name {
				err = fmt.Errorf("%w: the server lists tool %q more than once; the first is mounted", ErrToolNameTaken, other)
			}
		}
		if err != nil {
			o.Logger.Warn("mcp: tool not mounted", "server", o.Name, "tool", tool.Name, "error", err)
			continue
		}
		mounted[strings.ToLower(t.Listener)] = tool.Name
		m.tools = append(m.tools, t)
	}
	slices.Sort(m.names)
	m.listed = toolList(listed)
	go m.supervise(cs)
	return m, nil
}

// dial starts (or reaches) the server and initialises a session; the
// server's notifications/tools/list_changed go to listChanged (dropped
// while one waits there), its progress notifications to progress.
func dial(ctx context.Context, o Options, listChanged chan<- struct{}, progress *progressRoutes) (*sdk.ClientSession, error) {
	var (
		transport sdk.Transport
		group     *groupTransport // a command server's
	)
	if len(o.Command) > 0 {
		cmd := exec.Command(o.Command[0], o.Command[1:]...)
		cmd.Env = []string{}
		for _, k := range o.Env {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		group = newGroupTransport(cmd, o.Name, o.Logger, progress)
		transport = group
	} else {
		hc := *httpClient
		hc.Transport = progressTripper{next: http.DefaultTransport, routes: progress}
		transport = &sdk.StreamableClientTransport{Endpoint: o.URL, HTTPClient: &hc}
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "xmlpipe", Version: "v1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case listChanged <- struct{}{}:
			default:
			}
		}})
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// The SDK's bare "context deadline exceeded" says nothing of
		// what waited, nor what to look at.
		check := "is it an MCP server, writing JSON-RPC on its stdout and answering every request?"
		if len(o.Command) == 0 {
			check = "is it a streamable HTTP MCP endpoint?"
		} else if stray := group.strayOutput(); stray != "" {
			check = stray + "; " + check
		}
		return nil, fmt.Errorf("%w %s: connect: no answer to the MCP handshake within %s (server.timeout); %s: %w",
			ErrServer, o.Name, o.Timeout, check, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: connect: %w", ErrServer, o.Name, err)
	}
	return cs, nil
}

// Tools returns the mounted tools.
func (m *Mount) Tools() []Tool { return m.tools }

// Close ends the session (and stops a command server) and stops restarting
// it. It returns nil: a server that already exited, or exits badly, is not
// the organism's failure (logged); it returns within a few seconds.
func (m *Mount) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	cs := m.session
	m.session, m.down = nil, ErrClosed
	m.mu.Unlock()
	m.stop()
	if cs != nil {
		if err := closeSession(cs, m.o.Logger); err != nil {
			m.o.Logger.Info("mcp: server closed", "server", m.o.Name, "error", err)
		}
	}
	select {
	case <-m.done:
	case <-time.After(closeWait):
		m.o.Logger.Warn("mcp: server still stopping after close", "server", m.o.Name)
	}
	return nil
}

// closeSession closes cs, waiting at most closeWait.
func closeSession(cs *sdk.ClientSession, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- cs.Close() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(closeWait):
		log.Warn("mcp: closing a session takes longer than expected; left to finish")
		return nil
	}
}

// current returns the live session, or why there is none.
func (m *Mount) current() (*sdk.ClientSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session == nil {
		return nil, m.down
	}
	return m.session, nil
}

// fail reports that a call found cs's connection broken.
func (m *Mount) fail(cs *sdk.ClientSession) {
	m.mu.Lock()
	live := m.session == cs
	m.mu.Unlock()
	if live {
		select {
		case m.broken <- struct{}{}:
		default:
		}
	}
}

// supervise restarts the server whenever its session ends, until Close.
func (m *Mount) supervise(cs *sdk.ClientSession) {
	defer close(m.done)
	wait := m.o.RestartMin
	for {
		up := time.Now()
		ended := make(chan error, 1)
		go func(cs *sdk.ClientSession) { ended <- cs.Wait() }(cs)
		var why string
	serving:
		for {
			select {
			case err := <-ended:
				why = "the session ended"
				if err != nil {
					why = err.Error()
				}
				// Closed all the same: Close is what ends the session's
				// subscriptions/listen call (SEP-2575), whose goroutine
				// otherwise outlives it, one per restart.
				_ = closeSession(cs, m.o.Logger)
				break serving
			case <-m.broken:
				why = "its connection broke"
				go func(cs *sdk.ClientSession) { _ = closeSession(cs, m.o.Logger) }(cs)
				break serving
			case <-m.listChanged:
				m.relist(cs, "the server's tool list changed")
			case <-m.ctx.Done():
				return
			}
		}
		if !m.markDown(cs, why) {
			return
		}
		if time.Since(up) > m.o.RestartMax {
			wait = m.o.RestartMin // it had been up a good while: start over
		}
		for {
			d := jitter(wait)
			m.o.Logger.Warn("mcp: server exited; restarting", "server", m.o.Name, "reason", why, "in", d.Round(time.Millisecond))
			select {
			case <-time.After(d):
			case <-m.ctx.Done():
				return
			}
			wait = min(wait*2, m.o.RestartMax)
			ncs, err := dial(m.ctx, m.o, m.listChanged, m.progress)
			if err != nil {
				why = err.Error()
				m.setDown()
				continue
			}
			if !m.markUp(ncs) {
				_ = closeSession(ncs, m.o.Logger)
				return
			}
			cs = ncs
			break
		}
	}
}

// markDown records that cs is gone; false when the mount is closed.
func (m *Mount) markDown(cs *sdk.ClientSession, why string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	if m.session == cs {
		m.session = nil
	}
	// Why it exited (a command's path, a URL, a dial error) is the
	// operator's, logged by the restart loop: the callers are told only
	// that it exited.
	m.down = fmt.Errorf("%w %s: %w; restarting", ErrServer, m.o.Name, ErrExited)
	select { // a report about the old session is moot
	case <-m.broken:
	default:
	}
	return true
}

// setDown records that a restart failed (why is logged by the restart
// loop, not told to callers).
func (m *Mount) setDown() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.down = fmt.Errorf("%w %s: %w; restart failed; retrying", ErrServer, m.o.Name, ErrExited)
	}
}

// markUp installs a restarted session; false when the mount is closed.
func (m *Mount) markUp(cs *sdk.ClientSession) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.session, m.down = cs, nil
	m.mu.Unlock()
	m.o.Logger.Info("mcp: server restarted", "server", m.o.Name)
	m.relist(cs, "the restarted server offers other tools")
	return true
}

// Stale reports whether the server offers another tool list than the one
// mounted — it said its list changed (notifications/tools/list_changed)
// or it restarted with another — so that a reload mounts it afresh. The
// mounted tools stay as they are until then.
func (m *Mount) Stale() bool { return m.stale.Load() }

// relist lists cs's tools and, when they differ from the mounted ones,
// marks the mount stale and logs what changed (why says what prompted
// it).
func (m *Mount) relist(cs *sdk.ClientSession, why string) {
	ctx, cancel := context.WithTimeout(m.ctx, m.o.Timeout)
	defer cancel()
	var listed []*sdk.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			m.o.Logger.Info("mcp: could not list the server's tools", "server", m.o.Name, "error", err)
			return
		}
		listed = append(listed, tool)
	}
	if toolList(listed) == m.listed {
		return
	}
	m.stale.Store(true)
	var names []string
	for _, t := range listed {
		names = append(names, t.Name)
	}
	added, removed := diffNames(m.names, names)
	m.o.Logger.Warn("mcp: "+why+"; the mounted ones stay as they were until the organism reloads "+
		"(SIGHUP, xmlpipe ctl reload) or restarts", "server", m.o.Name, "added", strings.Join(added, ","),
		"removed", strings.Join(removed, ","), "mounted", strings.Join(m.names, ","))
}

// toolList is a tool list as mounted: the tools' names, descriptions and
// input schemas, in name order.
func toolList(tools []*sdk.Tool) string {
	type entry struct {
		Name, Description string
		InputSchema       any
	}
	list := make([]entry, 0, len(tools))
	for _, t := range tools {
		list = append(list, entry{t.Name, t.Description, t.InputSchema})
	}
	slices.SortStableFunc(list, func(a, b entry) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(list)
	if err != nil {
		return fmt.Sprintf("unencodable: %v", err) // never equal to a listed one
	}
	return string(b)
}

// diffNames returns the names in now and not in was, and those in was and
// not in now (was is sorted).
func diffNames(was, now []string) (added, removed []string) {
	seen := map[string]bool{}
	for _, n := range now {
		seen[n] = true
		if _, found := slices.BinarySearch(was, n); !found {
			added = append(added, n)
		}
	}
	for _, n := range was {
		if !seen[n] {
			removed = append(removed, n)
		}
	}
	slices.Sort(added)
	return added, removed
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func (m *Mount) mountTool(tool *sdk.Tool) (Tool, error) {
	listener := m.o.Name + "." + tool.Name
	if !gen.IsNCName(listener) {
		return Tool{}, fmt.Errorf("%q is not an XML name", listener)
	}
	schema, ok := tool.InputSchema.(map[string]any)
	if !ok {
		return Tool{}, fmt.Errorf("input schema of type %T", tool.InputSchema)
	}
	st, arrays, err := payloadStruct(listener, schema)
	if err != nil {
		return Tool{}, err
	}
	pt, err := xmlpipe.NewPayloadType(st)
	if err != nil {
		return Tool{}, err
	}
	h := &handler{m: m, tool: tool.Name, model: pt.Model(), arrays: arrays}
	return Tool{Listener: listener, Description: tool.Description, Payload: pt, Handler: h}, nil
}

type handler struct {
	m      *Mount
	tool   string
	model  *gen.Type
	arrays []string // required array arguments
}

// Handle calls the tool with the payload's fields as arguments.
func (h *handler) Handle(ctx context.Context, payload any, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	res := &ToolResult{Tool: h.tool}
	answer := func() (xmlpipe.Response, error) { return tools.Answer(h.m.o.Callers, md, res), nil }
	if err := h.m.checkNetwork(ctx); err != nil { // before anything reaches the server
		res.Error = err.Error()
		return answer()
	}
	args, err := h.arguments(payload)
	if err != nil {
		res.Error = err.Error()
		return answer()
	}
	cs, err := h.m.current()
	if err != nil {
		res.Error = err.Error()
		return answer()
	}
	ctx, cancel := context.WithTimeoutCause(ctx, h.m.o.Timeout, ErrNoAnswer)
	defer cancel()
	params := &sdk.CallToolParams{Name: h.tool, Arguments: args}
	if report := h.m.o.Progress; report != nil {
		listener := h.m.o.Name + "." + h.tool
		token, remove := h.m.progress.add(func(p *sdk.ProgressNotificationParams) {
			report(md.ThreadID, listener, progressText(listener, p))
		})
		defer remove()
		params.SetProgressToken(token)
	}
	r, err := cs.CallTool(ctx, params)
	switch {
	case err == nil:
		fill(res, r)
	case connectionLost(err):
		h.m.fail(cs)
		h.m.o.Logger.Warn("mcp: the server's connection broke during a call", "server", h.m.o.Name, "tool", h.tool,
			"error", err)
		res.Error = fmt.Sprintf("%v %s: %v; restarting", ErrServer, h.m.o.Name, ErrExited)
	case errors.Is(context.Cause(ctx), ErrNoAnswer):
		// Name the timeout, not the SDK's "context deadline exceeded".
		res.Error = fmt.Sprintf("%v %s: tool %s: %v (%s)", ErrServer, h.m.o.Name, h.tool, ErrNoAnswer, h.m.o.Timeout)
	default:
		budget := maxText
		res.Error = clipText(res, "error", fmt.Sprintf("%v: %v", ErrTool, err), &budget)
	}
	return answer()
}

// connectionLost reports a call error that means the server is gone (it
// exited, or the session or connection ended) rather than a failed call.
func connectionLost(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe)
}

// arguments is the JSON form of the decoded payload: exactly the fields it
// holds, native JSON values.
func (h *handler) arguments(payload any) (map[string]any, error) {
	if reflect.TypeOf(payload) != reflect.PointerTo(h.model.GoType) {
		return nil, fmt.Errorf("mcp: unexpected payload %T", payload)
	}
	args, err := codec.JSONOf(h.model, payload)
	if err != nil {
		return nil, fmt.Errorf("mcp: arguments: %w", err)
	}
	for _, a := range h.arrays {
		if _, ok := args[a]; !ok {
			args[a] = []any{}
		}
	}
	return args, nil
}
