package console

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/bus/client"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Remote errors: the shared bus client's, so a caller needs only this
// package.
var (
	// ErrLogin: the bus refused the credentials (or rate-limited them).
	ErrLogin = client.ErrLogin
	// ErrDisconnected: the bus closed the connection.
	ErrDisconnected = client.ErrDisconnected
)

// remoteTimeout bounds the login request, the WebSocket handshake and each
// frame written.
const remoteTimeout = 15 * time.Second

// Remote is the Backend of a console attached to a running organism over
// its main bus: it logs in over HTTPS and speaks the /ws JSON protocol
// (package bus documents it) through the bus's client library
// (pump/bus/client), whose Session matches the replies to their requests
// however the organism's events interleave.
type Remote struct {
	cl *client.Client
	s  *client.Session
	// Username and Role are the logged-in user's.
	Username, Role string
	out            organism.OutputFeed

	// govSubs watch the governance frames (WatchGovernance).
	govMu   sync.Mutex
	govSubs map[int]func(string)
	govNext int
}

var _ organism.Backend = (*Remote)(nil)

// Subscribe implements organism.Feed.
func (r *Remote) Subscribe(fn func(organism.Output)) (cancel func()) { return r.out.Subscribe(fn) }

// Dial logs in to the bus at baseURL ("https://host:8765") with creds and
// opens its /ws socket (DialAsk with creds as the answer).
func Dial(ctx context.Context, baseURL, fingerprint string, creds auth.Credentials) (*Remote, error) {
	return DialAsk(ctx, baseURL, fingerprint, func() (auth.Credentials, error) { return creds, nil })
}

// DialAsk logs in to the bus at baseURL ("https://host:8765") with the
// credentials ask supplies and opens its /ws socket. A bus in insecure dev
// mode (it says so on GET /auth/me) needs no login: ask is not called. With a fingerprint (the SHA-256 the server printed
// at start, "AB:CD:…" or plain hex) the server's certificate must match it
// exactly (self-signed certificates); without one it is verified against
// the system roots. An "http://" URL reaches a server in insecure dev mode.
// Its errors read "connect: …" or "login failed: …" (a *client.LoginError,
// with the bus's wait after a lockout), for the caller to prefix once.
func DialAsk(ctx context.Context, baseURL, fingerprint string, ask AskCredentials) (*Remote, error) {
	base, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("connect: %q is not an https:// URL", baseURL)
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS13}
	if fingerprint != "" {
		fp, err := certs.ParseFingerprint(fingerprint)
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		tlsConf = certs.PinnedClientConfig(fp)
	}
	hc := &http.Client{Timeout: remoteTimeout,
		Transport: &http.Transport{TLSClientConfig: tlsConf.Clone()}} // the transport adds ALPN protocols to its copy
	var askErr error // ask's own error is returned as is: it says what it could not read
	cl, err := login(ctx, hc, base.String(), func() (auth.Credentials, error) {
		c, err := ask()
		askErr = err
		return c, err
	})
	if err != nil {
		hc.CloseIdleConnections()
		if askErr != nil {
			return nil, askErr
		}
		return nil, err
	}
	r := &Remote{cl: cl}
	conn, err := client.Dial(ctx, client.Target{URL: cl.WSURL(), TLS: tlsConf, Token: cl.Token,
		Timeout: remoteTimeout, WriteTimeout: remoteTimeout})
	if err != nil {
		r.logout()
		return nil, fmt.Errorf("connect: %w", err)
	}
	r.Username, r.Role = conn.Username, conn.Role
	r.s = client.NewSession(conn, r.event)
	// Only the events the console shows: message frames (every envelope
	// of a conversation, with its payload) would be read and dropped. A
	// bus that does not know subscribe answers an error and sends them all,
	// which event ignores.
	var sub wire.Subscribed
	sctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	_ = r.request(sctx, wire.Request{Head: wire.Head{Type: wire.TypeSubscribe}, Events: remoteEvents}, &sub)
	return r, nil
}

// remoteEvents are the event frames the remote console turns into output
// (event and governanceEvent).
var remoteEvents = []string{wire.TypeOutput, wire.TypeReply, wire.TypeHuh, wire.TypeComplete, wire.TypeDelta,
	wire.TypeRefusal, wire.TypeApproval, wire.TypeApprovalDecided, wire.TypeHalted, wire.TypeResumed,
	wire.TypeGuardianAlert}

// logout revokes the token (best effort).
func (r *Remote) logout() {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	r.cl.Logout(ctx)
}

// Close logs out and closes the socket; it waits for the reader to stop.
func (r *Remote) Close() error {
	r.s.Close(remoteTimeout)
	r.logout()
	return nil
}

// Done is closed when the connection to the bus ends; Err says why.
func (r *Remote) Done() <-chan struct{} { return r.s.Done() }

// Err is why the connection ended (nil before, or after Close).
func (r *Remote) Err() error { return r.s.Err() }

// event turns an event frame into console Output.
func (r *Remote) event(typ string, data []byte) {
	switch typ {
	case wire.TypeOutput:
		var o wire.Output
		if json.Unmarshal(data, &o) == nil {
			r.out.Publish(organism.Output{Kind: organism.OutputPrint, Conversation: o.ThreadID, From: o.From, Text: o.Text})
		}
	case wire.TypeReply:
		var rp wire.Reply
		if json.Unmarshal(data, &rp) == nil {
			text := rp.Text
			if text == "" {
				text = rp.Payload
			}
			r.out.Publish(organism.Output{Kind: organism.OutputReply, Conversation: rp.ThreadID, From: rp.From, Text: text})
		}
	case wire.TypeHuh:
		var f wire.Failure
		if json.Unmarshal(data, &f) == nil {
			r.out.Publish(organism.Output{Kind: organism.OutputHuh, Conversation: f.ThreadID, From: f.From, Text: f.Error,
				Diagnostics: f.Diagnostics, Told: f.Told})
		}
	case wire.TypeComplete:
		var c wire.Complete
		if json.Unmarshal(data, &c) == nil {
			r.out.Publish(organism.Output{Kind: organism.OutputComplete, Conversation: c.ThreadID, Text: c.Error})
		}
	case wire.TypeDelta:
		var d wire.Delta
		if json.Unmarshal(data, &d) == nil {
			r.out.Publish(organism.Output{Kind: organism.OutputDelta, Conversation: d.ThreadID, From: d.Agent, Text: d.Text, End: d.End})
		}
	case wire.TypeRefusal:
		var f wire.Failure
		if json.Unmarshal(data, &f) == nil {
			r.out.Publish(organism.Output{Kind: organism.OutputPrint, Conversation: f.ThreadID, From: "refused " + f.To, Text: f.Error})
		}
	default:
		r.governanceEvent(typ, data)
	}
}

// request sends req and decodes its reply into out; an error frame becomes
// a Go error (see requestError).
func (r *Remote) request(ctx context.Context, req wire.Request, out any) error {
	err := r.s.Request(ctx, req, out)
	if ef, ok := errors.AsType[*client.ErrorFrame](err); ok {
		return requestError(req, ef.Frame)
	}
	return err
}

// requestError maps an error frame to the console's errors.
func requestError(req wire.Request, e wire.Error) error {
	switch e.Code {
	case wire.CodeUnknownTarget:
		return fmt.Errorf("%w: %s", organism.ErrUnknownListener, req.Target)
	case wire.CodeNoTextField:
		return fmt.Errorf("%s: %w", req.Target, organism.ErrNoTextField)
	case wire.CodeBadPayload:
		// "Invalid payload for X: why", worded as the local console does.
		return fmt.Errorf("%w%s", organism.ErrBadPayload, strings.TrimPrefix(e.Error, "Invalid payload"))
	case wire.CodeRejected:
		return &organism.Rejection{Huh: e.Error, Diagnostics: e.Diagnostics}
	case wire.CodeKilled:
		return fmt.Errorf("%w: %s", organism.ErrConversationKilled, e.Error)
	}
	return errors.New(e.Error)
}

// Send sends m as the bus's send command: target with content (the bus
// builds the payload as the in-process console does) or with a structured
// payload (as POST /api/v1/inject takes it), on m.Thread when set.
func (r *Remote) Send(ctx context.Context, m organism.Message) (string, error) {
	req := wire.Request{Head: wire.Head{Type: wire.TypeSend}, Target: m.Target, ThreadID: m.Thread}
	if len(m.Payload) > 0 {
		req.Payload = m.Payload
	} else {
		req.Content = m.Text
	}
	var sent wire.Sent
	if err := r.request(ctx, req, &sent); err != nil {
		return "", err
	}
	return sent.ThreadID, nil
}

// Usage implements UsageReporter: it asks the bus for the organism's LLM
// usage and newest calls.
func (r *Remote) Usage(ctx context.Context) (organism.Usage, bool, error) {
	var u wire.Usage
	if err := r.request(ctx, wire.Request{Head: wire.Head{Type: wire.TypeUsage}}, &u); err != nil {
		return organism.Usage{}, false, err
	}
	var out organism.Usage
	for _, t := range u.Agents {
		out.Agents = append(out.Agents, organism.TokenUsage{Name: t.Name, PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
			Requests: t.Requests})
	}
	for _, t := range u.Backends {
		out.Backends = append(out.Backends, organism.TokenUsage{Name: t.Name, PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
			Requests: t.Requests})
	}
	for _, c := range u.Calls {
		at, _ := time.Parse(time.RFC3339Nano, c.Time)
		out.Calls = append(out.Calls, organism.Call{Time: at, Conversation: c.Conversation, Agent: c.Agent, Backend: c.Backend,
			Model: c.Model, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
			UsageEstimated: c.UsageEstimated, ToolCalls: c.ToolCalls,
			FirstToken: fromMillis(c.FirstTokenMS), Duration: fromMillis(c.DurationMS), FinishReason: c.FinishReason,
			Error: c.Error, EnvelopeSeq: c.EnvelopeSeq})
	}
	return out, u.LLM, nil
}

// fromMillis is a duration given in milliseconds.
func fromMillis(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// Listeners asks the bus for its listeners.
func (r *Remote) Listeners(ctx context.Context) ([]organism.ListenerInfo, error) {
	var ls wire.Listeners
	if err := r.request(ctx, wire.Request{Head: wire.Head{Type: wire.TypeListeners}}, &ls); err != nil {
		return nil, err
	}
	out := make([]organism.ListenerInfo, 0, len(ls.Details))
	for _, l := range ls.Details {
		out = append(out, organism.ListenerInfo{Name: l.Name, Description: l.Description, Agent: l.Agent, Broadcast: l.Broadcast,
			RootTag: l.RootTag})
	}
	return out, nil
}

// Status asks the bus for the organism's status.
func (r *Remote) Status(ctx context.Context) (organism.Status, error) {
	var st wire.Status
	if err := r.request(ctx, wire.Request{Head: wire.Head{Type: wire.TypeStatus}}, &st); err != nil {
		return organism.Status{}, err
	}
	return organism.Status{Organism: st.Organism, Uptime: time.Duration(st.UptimeSeconds * float64(time.Second)),
		Listeners: st.Listeners, Threads: st.Threads, Idle: st.IdleThreads, Slots: st.Slots, Processed: st.Processed, Failed: st.Failed,
		InFlight: st.InFlight, Gateways: st.Gateways, Halted: st.Halted, HaltedListeners: st.HaltedListeners}, nil
}

// Threads asks the bus for the live threads.
func (r *Remote) Threads(ctx context.Context) ([]organism.Thread, error) {
	var ts wire.Threads
	if err := r.request(ctx, wire.Request{Head: wire.Head{Type: wire.TypeThreads}}, &ts); err != nil {
		return nil, err
	}
	out := make([]organism.Thread, 0, len(ts.Threads))
	for _, t := range ts.Threads {
		out = append(out, organism.Thread{ID: t.ID, Depth: t.Depth, Slots: t.Slots,
			Idle: time.Duration(t.IdleSeconds * float64(time.Second)), LastFrom: t.LastFrom, LastTo: t.LastTo, Ended: t.Ended})
	}
	return out, nil
}

// Monitor asks the bus for the history of the threads matching prefix.
func (r *Remote) Monitor(ctx context.Context, prefix string) ([]organism.History, error) {
	var m wire.Monitor
	if err := r.request(ctx, wire.Request{Head: wire.Head{Type: wire.TypeMonitor}, Prefix: prefix}, &m); err != nil {
		return nil, err
	}
	var out []organism.History
	for _, h := range m.Threads {
		hist := organism.History{ID: h.ID}
		for _, s := range h.Slots {
			ts, _ := time.Parse(time.RFC3339Nano, s.Timestamp)
			hist.Slots = append(hist.Slots, organism.Slot{From: s.From, To: s.To, PayloadType: s.PayloadType,
				Payload: s.Payload, Time: ts})
		}
		out = append(out, hist)
	}
	return out, nil
}

// remoteConfig is the part of GET /api/v1/organism/config (organism.yaml as
// loaded, secrets redacted by the bus) that /config shows.
type remoteConfig struct {
	Organism struct {
		Name string `json:"name"`
		Bind string `json:"bind"`
		Port int    `json:"port"`
	} `json:"organism"`
	OOB struct {
		Enabled    bool   `json:"enabled"`
		Bind       string `json:"bind"`
		Port       int    `json:"port"`
		UnixSocket string `json:"unix_socket"`
	} `json:"oob"`
	ThreadScheduling       string `json:"thread_scheduling"`
	MaxConcurrentPipelines int    `json:"max_concurrent_pipelines"`
	MaxConcurrentHandlers  int    `json:"max_concurrent_handlers"`
	MaxConcurrentPerAgent  int    `json:"max_concurrent_per_agent"`
	MaxChainDepth          int    `json:"max_chain_depth"`
	MaxInFlight            int    `json:"max_in_flight"`
}

var _ organism.ConfigReporter = (*Remote)(nil)

// Settings implements organism.ConfigReporter over the bus's REST API (GET
// /api/v1/organism/config). The file's path is not told over a connection.
func (r *Remote) Settings(ctx context.Context) (organism.Settings, error) {
	var c remoteConfig
	if err := r.rest(ctx, http.MethodGet, "/api/v1/organism/config", nil, &c); err != nil {
		return organism.Settings{}, err
	}
	st := organism.Settings{
		Organism:               c.Organism.Name,
		Bus:                    net.JoinHostPort(c.Organism.Bind, strconv.Itoa(c.Organism.Port)),
		ThreadScheduling:       c.ThreadScheduling,
		MaxConcurrentPipelines: c.MaxConcurrentPipelines,
		MaxConcurrentHandlers:  c.MaxConcurrentHandlers,
		MaxConcurrentPerAgent:  c.MaxConcurrentPerAgent,
		MaxChainDepth:          c.MaxChainDepth,
		MaxInFlight:            c.MaxInFlight,
	}
	if c.OOB.Enabled {
		st.OOB = organism.OOBAddress(c.OOB.Bind, c.OOB.Port, c.OOB.UnixSocket)
	}
	return st, nil
}
