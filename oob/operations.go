package oob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// injectTimeout bounds inject-message's wait for the ingress stages.
const injectTimeout = 30 * time.Second

// operations runs the request operations against the target.
type operations struct {
	s        *Server
	t        Target
	stopping atomic.Bool
	nextSub  atomic.Int64

	gmu sync.Mutex // the gateway file
	lmu sync.Mutex // the listener file

	// conns are the connections with subscriptions, for listener and
	// system events.
	cmu   sync.Mutex
	watch map[*conn]map[string]bool
	// classes are the classes of listeners registered over OOB (by lower
	// name), which the configuration does not know.
	classes map[string]string
}

func newOperations(s *Server) *operations {
	o := &operations{s: s, t: s.opts.Target, watch: map[*conn]map[string]bool{}, classes: map[string]string{}}
	o.storedClasses()
	return o
}

// close drops the subscription bookkeeping (the connections cancel their
// own pump subscriptions).
func (o *operations) close() {
	o.cmu.Lock()
	o.watch = map[*conn]map[string]bool{}
	o.cmu.Unlock()
}

// run dispatches one verified request.
func (o *operations) run(p *Operations, c *conn) reply {
	ok := func(r ResponsePayload) reply { return reply{resp: o.s.response(p.ID, r)} }
	fail := func(code, msg string) reply { return o.s.fail(p.ID, code, msg, "") }
	switch {
	case p.Shutdown != nil:
		return o.shutdown(p)
	case p.Halt != nil:
		return o.halt(p)
	case p.Resume != nil:
		return o.resume(p)
	case p.Reload != nil:
		return o.reload(p)
	case p.RegisterListener != nil:
		return o.registerListener(p)
	case p.UnregisterListener != nil:
		return o.unregisterListener(p)
	case p.ListListeners != nil:
		return ok(ResponsePayload{Listeners: o.listeners(p.ListListeners.Detailed, p.ListListeners.Team)})
	case p.GetListenerSchema != nil:
		return o.schema(p)
	case p.InjectMessage != nil:
		return o.inject(p)
	case p.GetThreadHistory != nil:
		return o.history(p)
	case p.SubscribeThread != nil:
		return o.subscribe(p, c)
	case p.Unsubscribe != nil:
		if c == nil || !c.dropSub(p.Unsubscribe.SubscriptionID) {
			return fail(CodeNotFound, "no subscription "+p.Unsubscribe.SubscriptionID+" on this connection")
		}
		o.unwatch(c, p.Unsubscribe.SubscriptionID)
		return ok(ResponsePayload{Ack: &Ack{Success: true, Message: "unsubscribed"}})
	case p.KillThread != nil:
		return o.kill(p)
	case p.CancelThread != nil:
		return o.cancelThread(p)
	case p.ListApprovals != nil:
		return o.listApprovals(p)
	case p.DecideApproval != nil:
		return o.decideApproval(p)
	case p.GetOrganismGraph != nil:
		return o.graph(p)
	case p.GetStatus != nil:
		if p.GetStatus.IncludeThreads {
			// privileged-msg.xsd's status has no threads section to put
			// them in: asking for one must not look answered.
			return fail(CodeInvalidArgument, "get-status: include-threads is not supported: the status counts the running "+
				"threads (active-threads); read one thread with get-thread-history")
		}
		return ok(ResponsePayload{Status: o.status(p.GetStatus)})
	case p.GetConfig != nil:
		return o.getConfig(p)
	case p.SetConfig != nil:
		return o.setConfig(p)
	case p.RegisterRemoteGateway != nil:
		return o.registerGateway(p)
	case p.UnregisterRemoteGateway != nil:
		return o.unregisterGateway(p)
	}
	return fail(CodeMalformed, "no operation in <payload>")
}

// lowerName is a listener name as routing compares it.
func lowerName(s string) string { return strings.ToLower(s) }

// shutdown acks, then (after the ack was written) stops the organism.
func (o *operations) shutdown(p *Operations) reply {
	if o.t.Stopper == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot be stopped over OOB", "")
	}
	if !o.stopping.CompareAndSwap(false, true) {
		return o.s.fail(p.ID, CodeShuttingDown, "a shutdown is already under way", "")
	}
	sd := p.Shutdown
	graceful := sd.Mode != "immediate"
	timeout := time.Duration(sd.TimeoutSeconds) * time.Second
	mode := "graceful"
	if !graceful {
		mode = "immediate"
	}
	o.s.log.Warn("shutdown requested over OOB", "mode", mode, "reason", sd.Reason, "timeout", timeout)
	o.systemEvent("shutdown-initiated", "shutdown requested over OOB ("+mode+")", sd.Reason)
	return reply{
		resp:  o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: "shutting down (" + mode + ")"}}),
		after: func() { o.t.Stopper.Stop(graceful, timeout, sd.Reason) },
	}
}

// halt is the emergency stop; the ack says what it did.
func (o *operations) halt(p *Operations) reply {
	if o.t.Halter == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot be halted over OOB", "")
	}
	if name := strings.TrimSpace(p.Halt.Listener); name != "" {
		return o.haltListener(p, name)
	}
	scope := pump.HaltAgents
	if p.Halt.Scope == "all" {
		scope = pump.HaltAll
	}
	rep, err := o.t.Halter.Halt("oob", scope)
	if err != nil {
		return o.s.fail(p.ID, CodeShuttingDown, err.Error(), "")
	}
	o.s.log.Warn("halt requested over OOB", "scope", rep.Scope.String(), "reason", p.Halt.Reason)
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true,
		Message: fmt.Sprintf("halted (%s): %d running calls cancelled (their messages wait for the resume), "+
			"%d queued messages held", rep.Scope, rep.Cancelled, rep.Held)}})}
}

// haltListener is <halt><listener>: the emergency stop of one listener.
func (o *operations) haltListener(p *Operations, name string) reply {
	if p.Halt.Scope != "" {
		return o.s.fail(p.ID, CodeInvalidArgument, "give scope or listener, not both", "")
	}
	rep, err := o.t.Halter.HaltListener("oob", name)
	switch {
	case errors.Is(err, pump.ErrUnknownListener):
		return o.s.fail(p.ID, CodeNotFound, "no listener named "+name, "")
	case err != nil:
		return o.s.fail(p.ID, CodeShuttingDown, err.Error(), "")
	}
	o.s.log.Warn("listener halt requested over OOB", "listener", rep.Listener, "reason", p.Halt.Reason)
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true,
		Message: fmt.Sprintf("halted listener %s: %d running calls cancelled (their messages wait for the resume), "+
			"%d queued messages held", rep.Listener, rep.Cancelled, rep.Held)}})}
}

// kill stops the conversation a thread belongs to, as POST
// /api/v1/threads/{id}/kill does.
func (o *operations) kill(p *Operations) reply {
	k := p.KillThread
	if strings.TrimSpace(k.ThreadID) == "" {
		return o.s.fail(p.ID, CodeInvalidArgument, "thread-id is empty: name a thread of the conversation to kill", "")
	}
	conv, err := o.t.Pump.Kill(k.ThreadID)
	switch {
	case errors.Is(err, pump.ErrUnknownThread):
		return o.s.fail(p.ID, CodeNotFound, "no live conversation has thread "+k.ThreadID, "")
	case errors.Is(err, pump.ErrConversationEnded):
		return o.s.fail(p.ID, CodeEnded, "conversation "+conv+" has ended already; nothing to stop", "")
	case err != nil:
		return o.s.fail(p.ID, CodeInternal, "kill failed", err.Error())
	}
	o.s.log.Warn("conversation killed over OOB", "thread", conv, "reason", k.Reason)
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true,
		Message: "conversation " + conv + " killed"}})}
}

// cancelThread stops the answer in flight of the conversation a thread
// belongs to and keeps the conversation, as POST
// /api/v1/threads/{id}/cancel does.
func (o *operations) cancelThread(p *Operations) reply {
	k := p.CancelThread
	if strings.TrimSpace(k.ThreadID) == "" {
		return o.s.fail(p.ID, CodeInvalidArgument, "thread-id is empty: name a thread of the conversation to cancel", "")
	}
	conv, err := o.t.Pump.Cancel(k.ThreadID)
	switch {
	case errors.Is(err, pump.ErrUnknownThread):
		return o.s.fail(p.ID, CodeNotFound, "no live conversation has thread "+k.ThreadID, "")
	case errors.Is(err, pump.ErrConversationEnded):
		return o.s.fail(p.ID, CodeEnded, "conversation "+conv+" is not answering; nothing to cancel", "")
	case err != nil:
		return o.s.fail(p.ID, CodeInternal, "cancel failed", err.Error())
	}
	o.s.log.Info("answer cancelled over OOB", "thread", conv, "reason", k.Reason)
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true,
		Message: "conversation " + conv + " cancelled; it goes on"}})}
}

// reload puts the organism file in force again (Target.Reloader): an ack,
// or RELOAD_REFUSED with the reason (SHUTTING_DOWN once the organism
// stops); the organism goes on either way.
func (o *operations) reload(p *Operations) reply {
	if o.t.Reloader == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot be reloaded over OOB", "")
	}
	reason := p.Reload.Reason
	o.s.log.Info("reload requested over OOB", "reason", reason)
	if err := o.t.Reloader.Reload(reason); err != nil {
		if errors.Is(err, pump.ErrClosed) {
			return o.s.fail(p.ID, CodeShuttingDown, "the organism is stopping", "")
		}
		return o.s.fail(p.ID, CodeReloadRefused, err.Error(), "the running configuration stays")
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: "reloaded"}})}
}

// resume lifts a halt.
func (o *operations) resume(p *Operations) reply {
	if o.t.Halter == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism cannot be halted over OOB", "")
	}
	if name := strings.TrimSpace(p.Resume.Listener); name != "" {
		msg := "resumed " + name
		if !o.t.Halter.ResumeListener("oob", name) {
			msg = name + " was not halted"
		}
		return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: msg}})}
	}
	msg := "resumed"
	if !o.t.Halter.Resume("oob") {
		msg = "not halted"
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: msg}})}
}

// listeners lists the listeners (team "" = all).
func (o *operations) listeners(detailed bool, team string) *ListenersResponse {
	out := &ListenersResponse{Listeners: []ListenerInfo{}}
	for _, l := range o.t.Pump.Listeners() {
		info := ListenerInfo{Name: l.Name, Class: l.RootTag, Description: l.Description, IsAgent: l.Agent, RootTag: l.RootTag}
		if lc, ok := o.t.config().Listener(l.Name); ok {
			info.Class = lc.PayloadClass
		}
		o.cmu.Lock()
		if c, ok := o.classes[lowerName(l.Name)]; ok {
			info.Class = c
		}
		o.cmu.Unlock()
		if team != "" && info.Team != team {
			continue // listeners carry no team in this organism's configuration
		}
		if len(l.Peers) > 0 {
			info.Peers = &PeerList{Peers: l.Peers}
		}
		if detailed {
			handled, active := l.Handled, len(l.Current)
			info.MessagesHandled, info.ActiveThreads = &handled, &active
		}
		out.Listeners = append(out.Listeners, info)
	}
	out.Count = len(out.Listeners)
	return out
}

// schema returns a listener's payload XSD or example.
func (o *operations) schema(p *Operations) reply {
	a := p.GetListenerSchema
	l, ok := o.t.Pump.Lookup(a.Name)
	if !ok || l.Payload == nil {
		return o.s.fail(p.ID, CodeNotFound, "no listener "+a.Name, "")
	}
	format := a.Format
	if format == "" {
		format = "xsd"
	}
	text := l.Payload.XSD()
	if format == "example" {
		text = l.Payload.Example()
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{ListenerSchema: &ListenerSchema{Format: format, Name: l.Name, Schema: string(text)}})}
}

// inject sends the payload to the listener named in to.
func (o *operations) inject(p *Operations) reply {
	a := p.InjectMessage
	payload := bytes.TrimSpace(a.Payload.Inner)
	if len(payload) == 0 || payload[0] != '<' {
		return o.s.fail(p.ID, CodeInvalidArgument, "inject-message needs one payload element in <payload>", "")
	}
	from := a.From
	if from == "" {
		from = "external"
	}
	thread := a.ThreadID
	if thread == "" {
		thread = stage.NewThreadID()
	}
	if _, ok := o.t.Pump.Lookup(a.To); !ok {
		return o.s.fail(p.ID, CodeNotFound, "no listener "+a.To, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), injectTimeout)
	defer cancel()
	got, err := o.t.Pump.SendEnvelope(ctx, pump.Envelope{From: from, To: a.To, Thread: thread, Payload: payload},
		pump.OutletFunc(func(pump.Event) {}))
	if err != nil {
		return o.s.fail(p.ID, CodeInvalidArgument, "the message was refused", failureText(err))
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{ThreadCreated: &ThreadCreated{ThreadID: got, RoutedTo: a.To}})}
}

// history pages through a thread's journal, or (conversation) through
// that of the conversation the thread belongs to.
func (o *operations) history(p *Operations) reply {
	a := p.GetThreadHistory
	if o.t.Journal == nil {
		return o.s.fail(p.ID, CodeNotSupported, "this organism keeps no journal", "")
	}
	es, err := o.t.Journal.Thread(a.ThreadID)
	if err == nil && a.Conversation && len(es) > 0 {
		cr, ok := o.t.Journal.(ConversationReader)
		if !ok {
			return o.s.fail(p.ID, CodeNotSupported, "this organism's journal reads no conversations", "")
		}
		if conv := es[0].Conversation; conv != "" {
			es, err = cr.Conversation(conv)
		}
	}
	if err != nil {
		return o.s.fail(p.ID, CodeInternal, "the journal could not be read", err.Error())
	}
	if len(es) == 0 {
		return o.s.fail(p.ID, CodeNotFound, "no journaled message on thread "+a.ThreadID, "")
	}
	h := &ThreadHistory{ThreadID: a.ThreadID, Total: len(es), Offset: a.Offset, Messages: []ThreadMessage{}}
	start := min(a.Offset, len(es))
	end := len(es)
	if a.Limit > 0 {
		end = min(start+a.Limit, len(es))
	}
	for _, e := range es[start:end] {
		m := ThreadMessage{Seq: e.Seq, From: e.From, To: e.To, Timestamp: e.Time.UTC(), PayloadType: e.PayloadTag}
		if a.Conversation {
			m.Thread = e.Thread
		}
		if a.IncludePayloads {
			m.Payload = string(payloadOf(e.Bytes))
		}
		h.Messages = append(h.Messages, m)
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{ThreadHistory: h})}
}

// payloadOf is the payload element of a canonical envelope, whatever the
// prefix (stage.EnvelopePayload), or the envelope itself when it has none.
func payloadOf(env []byte) []byte {
	if p, ok := stage.EnvelopePayload(env); ok {
		return p
	}
	return env
}

// status reports the organism's state.
func (o *operations) status(a *GetStatus) *Status {
	st := o.t.Pump.Stats()
	ls := o.t.Pump.Listeners()
	depth := 0
	for _, l := range ls {
		depth += l.QueueDepth
	}
	state := "running"
	if _, halted := o.t.Pump.Halted(); halted {
		state = "halted"
	}
	if o.stopping.Load() {
		state = "shutting-down"
	}
	s := &Status{Name: o.t.Pump.Organism(), UptimeSeconds: int64(st.Uptime / time.Second), State: state,
		ListenerCount: len(ls), ActiveThreads: o.activeThreads(), MessagesProcessed: st.Processed, QueueDepth: depth}
	if a.IncludeListeners {
		s.Listeners = o.listeners(true, "")
	}
	if a.IncludeMetrics {
		s.Metrics = &Metrics{Metrics: []Metric{
			{Name: "messages_processed", Type: "counter", Value: strconv.FormatInt(st.Processed, 10)},
			{Name: "messages_failed", Type: "counter", Value: strconv.FormatInt(st.Failed, 10)},
			{Name: "in_flight", Type: "gauge", Value: strconv.Itoa(st.InFlight)},
			{Name: "threads", Type: "gauge", Value: strconv.Itoa(st.Threads)},
			{Name: "queue_depth", Type: "gauge", Value: strconv.Itoa(depth)},
			{Name: "oob_replay_cache", Type: "gauge", Value: strconv.Itoa(o.s.replay.len())},
		}}
	}
	s.Gateways = o.gatewayStatus()
	s.HaltedListeners = o.t.Pump.HaltedListeners()
	s.Store = o.storeStatus()
	return s
}

// storeStatus is the status's <store>: nil without a store that reports
// its health (*store.Store does).
func (o *operations) storeStatus() *StoreStatus {
	j, ok := o.t.Journal.(interface{ Health() store.Health })
	if !ok {
		return nil
	}
	h := j.Health()
	if h.OK {
		return &StoreStatus{State: "ok"}
	}
	return &StoreStatus{State: "failing", Error: h.Error, Since: h.Since.UTC().Format(time.RFC3339), HeldWrites: h.Held}
}

// gatewayStatus is the status's <gateways>: nil without a federation or
// any gateway.
func (o *operations) gatewayStatus() *GatewaysStatus {
	if o.t.Federation == nil {
		return nil
	}
	st := o.t.Federation.Status()
	if len(st) == 0 {
		return nil
	}
	gs := &GatewaysStatus{Count: len(st)}
	for _, g := range st {
		s := GatewayState{Name: g.Name, PeerAddress: g.PeerAddress, Peer: g.Peer, State: g.State, LastError: g.LastError,
			EnvelopesIn: g.EnvelopesIn, EnvelopesOut: g.EnvelopesOut, Waiting: g.Waiting, Queued: g.Queued}
		if !g.Since.IsZero() {
			s.Since = g.Since.UTC().Format(time.RFC3339)
		}
		gs.Gateways = append(gs.Gateways, s)
	}
	return gs
}

// configKeys are the keys get-config reports; mutable ones set-config may
// change.
func (o *operations) configKeys() []ConfigEntry {
	c := o.t.config()
	es := []ConfigEntry{
		{Key: "organism.name", Value: c.Organism.Name, Description: "the organism's name"},
		{Key: "organism.port", Value: strconv.Itoa(c.Organism.Port), Description: "main bus port"},
		{Key: "organism.data_dir", Value: c.Organism.DataDir, Description: "data directory"},
		{Key: "oob.bind", Value: c.OOB.Bind, Description: "OOB listen address"},
		{Key: "oob.port", Value: strconv.Itoa(c.OOB.Port), Description: "OOB WebSocket port"},
		{Key: "oob.unix_socket", Value: c.OOB.UnixSocket, Description: "OOB Unix socket"},
		{Key: "listeners", Value: strconv.Itoa(len(c.Listeners)), Description: "configured listeners"},
		{Key: "gateways", Value: strconv.Itoa(len(c.Gateways)), Description: "configured gateways"},
	}
	if o.t.LogLevel != nil {
		es = append(es, ConfigEntry{Key: "log_level", Value: strings.ToLower(o.t.LogLevel.Level().String()), Mutable: true,
			Description: "minimum log level: debug, info, warn or error"})
	}
	return es
}

func (o *operations) getConfig(p *Operations) reply {
	es := o.configKeys()
	if k := p.GetConfig.Key; k != "" {
		i := slices.IndexFunc(es, func(e ConfigEntry) bool { return e.Key == k })
		if i < 0 {
			return o.s.fail(p.ID, CodeNotFound, "no config key "+k, "")
		}
		es = es[i : i+1]
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{Config: &ConfigResponse{Entries: es}})}
}

func (o *operations) setConfig(p *Operations) reply {
	a := p.SetConfig
	es := o.configKeys()
	i := slices.IndexFunc(es, func(e ConfigEntry) bool { return e.Key == a.Key })
	switch {
	case i < 0:
		return o.s.fail(p.ID, CodeNotFound, "no config key "+a.Key, "")
	case !es[i].Mutable:
		return o.s.fail(p.ID, CodeImmutable, a.Key+" cannot be changed at runtime (edit organism.yaml and reload)", "")
	}
	// log_level is the one mutable key.
	var lv slogLevel
	if err := lv.parse(a.Value); err != nil {
		return o.s.fail(p.ID, CodeInvalidArgument, err.Error(), "")
	}
	old := o.t.LogLevel.Level()
	o.t.LogLevel.Set(lv.l)
	o.s.log.Warn("config changed over OOB", "key", a.Key, "old", old.String(), "new", lv.l.String())
	o.systemEvent("config-changed", a.Key+" = "+a.Value, "")
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: a.Key + " = " + a.Value}})}
}

// gateways reads the stored gateways.
func (o *operations) gateways() ([]RegisterRemoteGateway, error) {
	return ReadGateways(o.t.GatewayFile)
}

// ReadGateways reads the gateways register-remote-gateway stored in path
// (none when the file does not exist).
func ReadGateways(path string) ([]RegisterRemoteGateway, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var gs []RegisterRemoteGateway
	if err := json.Unmarshal(b, &gs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gs, nil
}

func (o *operations) saveGateways(gs []RegisterRemoteGateway) error {
	b, err := json.MarshalIndent(gs, "", "  ")
	if err != nil {
		return err
	}
	tmp := o.t.GatewayFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, o.t.GatewayFile)
}

// editGateways rewrites the stored gateways with edit, under the store's
// lock. edit returns the new list, or a refusal to answer instead (nothing
// is written then); the returned reply is that refusal or a store failure,
// and ok is true when the list was written.
func (o *operations) editGateways(id string, edit func([]RegisterRemoteGateway) ([]RegisterRemoteGateway, *reply)) (reply, bool) {
	if o.t.GatewayFile == "" {
		return o.s.fail(id, CodeNotSupported, "this organism has no data directory to store gateways in", ""), false
	}
	o.gmu.Lock()
	defer o.gmu.Unlock()
	gs, err := o.gateways()
	if err != nil {
		return o.s.fail(id, CodeInternal, "the gateway store could not be read", err.Error()), false
	}
	gs, refused := edit(gs)
	if refused != nil {
		return *refused, false
	}
	if err := o.saveGateways(gs); err != nil {
		return o.s.fail(id, CodeInternal, "the gateway store could not be written", err.Error()), false
	}
	return reply{}, true
}

// gatewayStopTimeout bounds stopping a gateway's imports' handlers.
const gatewayStopTimeout = 30 * time.Second

func (o *operations) registerGateway(p *Operations) reply {
	g := *p.RegisterRemoteGateway
	if o.t.Gateways != nil {
		// A re-registration replaces the gateway stored for the URL; one
		// that is refused leaves it running as it was.
		var old *RegisterRemoteGateway
		if gs, err := o.gateways(); err == nil {
			if i := slices.IndexFunc(gs, func(x RegisterRemoteGateway) bool { return x.URL == g.URL }); i >= 0 {
				old = &gs[i]
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), gatewayStopTimeout)
		err := o.t.Gateways.RemoveGateway(ctx, g.URL)
		cancel()
		if err == nil {
			if err = o.t.Gateways.AddGateway(g); err != nil && old != nil {
				if rerr := o.t.Gateways.AddGateway(*old); rerr != nil {
					o.s.log.Error("the gateway registered before could not be started again", "url", old.URL, "error", rerr)
				}
			}
		}
		if err != nil {
			return o.s.fail(p.ID, CodeInvalidArgument, "gateway "+g.URL+" not started", err.Error())
		}
	}
	if r, ok := o.editGateways(p.ID, func(gs []RegisterRemoteGateway) ([]RegisterRemoteGateway, *reply) {
		gs = slices.DeleteFunc(gs, func(x RegisterRemoteGateway) bool { return x.URL == g.URL })
		return append(gs, g), nil
	}); !ok {
		return r
	}
	o.s.log.Warn("remote gateway registered over OOB", "url", g.URL)
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true,
		Message: "gateway " + g.URL + " stored (" + o.t.GatewayFile + ")"}})}
}

func (o *operations) unregisterGateway(p *Operations) reply {
	url := p.UnregisterRemoteGateway.URL
	if o.t.Gateways != nil {
		ctx, cancel := context.WithTimeout(context.Background(), gatewayStopTimeout)
		err := o.t.Gateways.RemoveGateway(ctx, url)
		cancel()
		if err != nil {
			o.s.log.Warn("remote gateway not stopped cleanly", "url", url, "error", err)
		}
	}
	if r, ok := o.editGateways(p.ID, func(gs []RegisterRemoteGateway) ([]RegisterRemoteGateway, *reply) {
		n := len(gs)
		if gs = slices.DeleteFunc(gs, func(x RegisterRemoteGateway) bool { return x.URL == url }); len(gs) == n {
			r := o.s.fail(p.ID, CodeNotFound, o.notRegistered(url), "")
			return nil, &r
		}
		return gs, nil
	}); !ok {
		return r
	}
	return reply{resp: o.s.response(p.ID, ResponsePayload{Ack: &Ack{Success: true, Message: "gateway " + url + " removed"}})}
}
