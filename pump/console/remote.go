package console

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/bus/certs"
	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// Remote errors.
var (
	// ErrLogin: the bus refused the credentials (or rate-limited them).
	ErrLogin = errors.New("login failed")
	// ErrDisconnected: the bus closed the connection.
	ErrDisconnected = errors.New("disconnected from the bus")
)

// remoteTimeout bounds the login request and the WebSocket handshake.
const remoteTimeout = 15 * time.Second

// Remote is the Backend of a console attached to a running organism over
// its main bus: it logs in over HTTPS and speaks the /ws JSON protocol
// (package bus documents it). Requests carry an id so replies are matched
// however the organism's events interleave.
type Remote struct {
	base   *url.URL
	client *http.Client
	ws     *websocket.Conn
	token  string
	// Username and Role are the logged-in user's.
	Username, Role string
	out            organism.OutputFeed

	wmu     sync.Mutex // one writer at a time
	mu      sync.Mutex
	pending map[string]chan json.RawMessage
	next    atomic.Int64
	done    chan struct{}
	err     error // why the connection ended (after done is closed)
	closed  atomic.Bool

	// govSubs watch the governance frames (WatchGovernance).
	govMu   sync.Mutex
	govSubs map[int]func(string)
	govNext int
}

var _ organism.Backend = (*Remote)(nil)

// Subscribe implements organism.Feed.
func (r *Remote) Subscribe(fn func(organism.Output)) (cancel func()) { return r.out.Subscribe(fn) }

// Dial logs in to the bus at baseURL ("https://host:8765") with creds and
// opens its /ws socket. With a fingerprint (the SHA-256 the server printed
// at start, "AB:CD:…" or plain hex) the server's certificate must match it
// exactly (self-signed certificates); without one it is verified against
// the system roots. An "http://" URL reaches a server in insecure dev mode.
func Dial(ctx context.Context, baseURL, fingerprint string, creds auth.Credentials) (*Remote, error) {
	base, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("console: connect: %q is not an https:// URL", baseURL)
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS13}
	if fingerprint != "" {
		fp, err := certs.ParseFingerprint(fingerprint)
		if err != nil {
			return nil, fmt.Errorf("console: connect: %w", err)
		}
		tlsConf = certs.PinnedClientConfig(fp)
	}
	r := &Remote{base: base, client: &http.Client{Timeout: remoteTimeout,
		Transport: &http.Transport{TLSClientConfig: tlsConf.Clone()}}, // the transport adds ALPN protocols to its copy
		pending: map[string]chan json.RawMessage{}, done: make(chan struct{})}
	if err := r.login(ctx, creds); err != nil {
		r.client.CloseIdleConnections()
		return nil, err
	}
	wsURL := *base
	wsURL.Scheme = map[string]string{"https": "wss", "http": "ws"}[base.Scheme]
	wsURL.Path = strings.TrimRight(base.Path, "/") + "/ws"
	d := websocket.Dialer{TLSClientConfig: tlsConf.Clone(), HandshakeTimeout: remoteTimeout}
	ws, resp, err := d.DialContext(ctx, wsURL.String(), http.Header{"Authorization": {"Bearer " + r.token}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		r.logout()
		return nil, fmt.Errorf("console: connect %s: %w", wsURL.Redacted(), err)
	}
	r.ws = ws
	var hello wire.Connected
	_ = ws.SetReadDeadline(time.Now().Add(remoteTimeout))
	if err := ws.ReadJSON(&hello); err != nil || hello.Type != wire.TypeConnected {
		ws.Close()
		r.logout()
		return nil, fmt.Errorf("console: connect: no greeting from the bus: %v", err)
	}
	_ = ws.SetReadDeadline(time.Time{})
	r.Username, r.Role = hello.Username, hello.Role
	go r.readLoop()
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

// login runs POST /auth/login and keeps the token.
func (r *Remote) login(ctx context.Context, c auth.Credentials) error {
	body, err := json.Marshal(map[string]string{"username": c.Username, "password": c.Password, "totp": c.TOTP})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base.String()+"/auth/login", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("console: login: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("console: login: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Token, Error string
	}
	_ = json.Unmarshal(raw, &out)
	switch {
	case resp.StatusCode == http.StatusOK && out.Token != "":
		r.token = out.Token
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusTooManyRequests ||
		resp.StatusCode == http.StatusBadRequest:
		return fmt.Errorf("console: %w: %s", ErrLogin, cmp.Or(out.Error, resp.Status))
	default:
		return fmt.Errorf("console: login: %s: %s", resp.Status, cmp.Or(out.Error, strings.TrimSpace(string(raw))))
	}
}

// logout revokes the token (best effort).
func (r *Remote) logout() {
	defer r.client.CloseIdleConnections()
	if r.token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base.String()+"/auth/logout", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if resp, err := r.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// Close logs out and closes the socket; it waits for the reader to stop.
func (r *Remote) Close() error {
	if r.closed.Swap(true) {
		<-r.done
		return nil
	}
	r.wmu.Lock()
	_ = r.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	r.wmu.Unlock()
	select {
	case <-r.done:
	case <-time.After(remoteTimeout):
	}
	r.ws.Close()
	<-r.done
	r.logout()
	return nil
}

// Done is closed when the connection to the bus ends; Err says why.
func (r *Remote) Done() <-chan struct{} { return r.done }

// Err is why the connection ended (nil before, or after Close).
func (r *Remote) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// readLoop dispatches frames: replies to their waiting request, events to
// the subscribers.
func (r *Remote) readLoop() {
	var err error
	defer func() {
		if !r.closed.Load() {
			r.err = fmt.Errorf("%w: %v", ErrDisconnected, err)
		}
		r.mu.Lock()
		for id, ch := range r.pending {
			close(ch)
			delete(r.pending, id)
		}
		r.mu.Unlock()
		close(r.done)
	}()
	for {
		var data []byte
		if _, data, err = r.ws.ReadMessage(); err != nil {
			return
		}
		var head wire.Head
		if json.Unmarshal(data, &head) != nil {
			continue
		}
		if len(head.ID) > 0 {
			r.mu.Lock()
			ch := r.pending[string(head.ID)]
			delete(r.pending, string(head.ID))
			r.mu.Unlock()
			if ch != nil {
				ch <- data
			}
			continue
		}
		r.event(head.Type, data)
	}
}

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
				Diagnostics: f.Diagnostics})
		}
	case wire.TypeComplete:
		var c wire.Complete
		if json.Unmarshal(data, &c) == nil {
			r.out.Publish(organism.Output{Kind: organism.OutputComplete, Conversation: c.ThreadID})
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
	id := strconv.Quote("c" + strconv.FormatInt(r.next.Add(1), 10))
	req.ID = json.RawMessage(id)
	ch := make(chan json.RawMessage, 1)
	r.mu.Lock()
	select {
	case <-r.done:
		r.mu.Unlock()
		return r.connErr()
	default:
	}
	r.pending[id] = ch
	r.mu.Unlock()
	r.wmu.Lock()
	_ = r.ws.SetWriteDeadline(time.Now().Add(remoteTimeout))
	err := r.ws.WriteJSON(req)
	r.wmu.Unlock()
	if err != nil {
		r.forget(id)
		return fmt.Errorf("console: %s: %w", req.Type, err)
	}
	var data json.RawMessage
	select {
	case d, ok := <-ch:
		if !ok {
			return r.connErr()
		}
		data = d
	case <-ctx.Done():
		r.forget(id)
		return ctx.Err()
	}
	var head wire.Head
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("console: %s: bad reply: %w", req.Type, err)
	}
	if head.Type == wire.TypeError {
		var e wire.Error
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("console: %s: bad reply: %w", req.Type, err)
		}
		return requestError(req, e)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("console: %s: bad reply: %w", req.Type, err)
	}
	return nil
}

func (r *Remote) forget(id string) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// connErr is the error of a request on a closed connection.
func (r *Remote) connErr() error {
	if err := r.Err(); err != nil {
		return err
	}
	return ErrDisconnected
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
			Model: c.Model, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, ToolCalls: c.ToolCalls,
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
		InFlight: st.InFlight, Gateways: st.Gateways}, nil
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
			hist.Slots = append(hist.Slots, organism.Slot{From: s.From, To: s.To, PayloadType: s.PayloadType, Time: ts})
		}
		out = append(out, hist)
	}
	return out, nil
}
