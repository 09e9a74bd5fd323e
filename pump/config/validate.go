package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/xml-pipeline/xmlpipe/gen"
)

// Validate checks the whole configuration: required keys, enums, limits,
// cross references (peers, gateway names), and returns every problem found,
// joined with errors.Join, each located with file:line when the
// configuration was loaded from a file. It expects canonical values, as
// Parse and Load produce; root-tag collisions need the listener catalog and
// are checked by the pump (see Pos and Errorf).
func (o *Organism) Validate() error {
	return joinErrors(o.problems())
}

// reporter collects validation problems, skipping those about values that
// already failed to decode.
type reporter struct {
	o    *Organism
	errs []*Error
}

// problems runs every check.
func (o *Organism) problems() []*Error {
	r := &reporter{o: o}
	o.checkOrganism(r)
	o.checkLimits(r)
	o.checkLLM(r)
	o.checkListeners(r)
	o.checkOOB(r)
	o.checkMeta(r)
	o.checkGateways(r)
	o.checkPlatform(r)
	o.checkJournal(r)
	o.checkBudgets(r)
	o.checkAuth(r)
	o.checkObservability(r)
	o.checkRouting(r)
	o.checkGovernance(r)
	o.checkProfiles(r)
	o.checkMemoryPolicy(r)
	o.checkAEIOU(r)
	return r.errs
}

// add reports a problem with the value at path.
func (r *reporter) add(path, format string, args ...any) {
	r.addAbout(path, path, format, args...)
}

// addAbout reports a problem displayed at path but concerning the value at
// about (e.g. a missing key, shown at its mapping).
func (r *reporter) addAbout(about, path, format string, args ...any) {
	for bad := range r.o.bad {
		if about == bad || strings.HasPrefix(about, bad+".") || strings.HasPrefix(about, bad+"[") {
			return
		}
	}
	r.errs = append(r.errs, &Error{Pos: r.o.Pos(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// missing reports a required key absent from the mapping at path.
func (r *reporter) missing(path, key string) {
	r.addAbout(childKey(path, key), path, "missing required key %q", key)
}

func (r *reporter) positive(path string, v int) {
	if v <= 0 {
		r.add(path, "must be positive, got %d", v)
	}
}

func (r *reporter) nonNegative(path string, v int) {
	if v < 0 {
		r.add(path, "must not be negative, got %d", v)
	}
}

func (r *reporter) positiveDuration(path string, d Duration) {
	if d <= 0 {
		r.add(path, "must be positive, got %s", d)
	}
}

func (r *reporter) port(path string, v int) {
	if v < 1 || v > 65535 {
		r.add(path, "want a port number (1-65535), got %d", v)
	}
}

// line describes where the value at path is, for "first at" notes.
func (r *reporter) line(path string) string {
	if p := r.o.Pos(path); p.Line > 0 {
		return fmt.Sprintf("%s at line %d", path, p.Line)
	}
	return path
}

func (o *Organism) checkOrganism(r *reporter) {
	s := o.Organism
	if strings.TrimSpace(s.Name) == "" {
		r.add("organism.name", "must not be empty")
	}
	r.port("organism.port", s.Port)
	if !validBind(s.Bind) {
		r.add("organism.bind", "want an IP address (127.0.0.1, ::1, 0.0.0.0) or localhost, got %q", s.Bind)
	}
	if (s.TLS.Cert == "") != (s.TLS.Key == "") {
		r.add("organism.tls", "set both cert and key, or neither")
	}
	if s.DataDir == "" {
		r.add("organism.data_dir", "must not be empty")
	}
	r.positive("organism.max_message_bytes", s.MaxMessageBytes)
}

func (o *Organism) checkLimits(r *reporter) {
	r.positive("max_concurrent_pipelines", o.MaxConcurrentPipelines)
	r.positive("max_concurrent_handlers", o.MaxConcurrentHandlers)
	r.positive("max_concurrent_per_agent", o.MaxConcurrentPerAgent)
	o.checkChainDepth(r)
	r.positive("max_in_flight", o.MaxInFlight)
	if o.AdmitWait < 0 {
		r.add("admit_wait", "must not be negative, got %s", o.AdmitWait)
	}
	if o.MaxQueueWait < 0 {
		r.add("max_queue_wait", "must not be negative, got %s", o.MaxQueueWait)
	}
	if !o.ThreadScheduling.Valid() {
		r.add("thread_scheduling", "unknown policy %q (want breadth-first or depth-first)", o.ThreadScheduling)
	}
}

func (o *Organism) checkLLM(r *reporter) {
	l := o.LLM
	if !l.Strategy.Valid() {
		r.add("llm.strategy", "unknown strategy %q (want failover, round-robin or least-loaded)", l.Strategy)
	}
	r.nonNegative("llm.retries", l.Retries)
	if l.RetryBaseDelay < 0 {
		r.add("llm.retry_base_delay", "must not be negative, got %s", l.RetryBaseDelay)
	}
	if l.RetryMaxDelay < l.RetryBaseDelay {
		r.add("llm.retry_max_delay", "must not be less than retry_base_delay (%s), got %s", l.RetryBaseDelay, l.RetryMaxDelay)
	}
	names := map[string]string{}
	for i, b := range l.Backends {
		path := childIndex("llm.backends", i)
		switch {
		case b.Provider == "":
			r.missing(path, "provider")
		case !b.Provider.Valid():
			r.add(path+".provider", "unknown provider %q (want xai, anthropic, openai or ollama)", b.Provider)
		}
		if b.Name != "" {
			key := strings.ToLower(b.Name)
			if first, dup := names[key]; dup {
				r.add(path+".name", "duplicate backend name %q (%s); give each backend a distinct name", b.Name, r.line(first))
			} else {
				names[key] = path
			}
		}
		if b.BaseURL != "" {
			u, err := url.Parse(b.BaseURL)
			switch {
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				r.add(path+".base_url", "want an http:// or https:// URL, got %q", b.BaseURL)
			case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(b.BaseURL, "?") || strings.HasSuffix(b.BaseURL, "#"):
				r.add(path+".base_url", "want a URL without query or fragment (the provider's path is appended to it), got %q", b.BaseURL)
			}
		}
		models := map[string]int{}
		for j, m := range b.SupportedModels {
			mp := childIndex(path+".supported_models", j)
			key := strings.ToLower(strings.TrimSpace(m))
			if key == "" {
				r.add(mp, "empty model name")
				continue
			}
			if first, dup := models[key]; dup {
				r.add(mp, "%q is listed twice (also supported_models[%d]; names are compared without case)", m, first)
				continue
			}
			models[key] = j
		}
		checkToolCalling(r, path+".tool_calling", b.ToolCalling)
		checkContextWindow(r, path+".context_window", b.ContextWindow)
		r.nonNegative(path+".priority", b.Priority)
		r.positive(path+".rate_limit_tpm", b.RateLimitTPM)
		r.positive(path+".max_concurrent", b.MaxConcurrent)
		r.positiveDuration(path+".timeout", b.Timeout)
	}
}

func (o *Organism) checkListeners(r *reporter) {
	names := map[string]string{} // lower-case name → path of its first use
	for i, l := range o.Listeners {
		path := childIndex("listeners", i)
		required := []struct{ key, value string }{
			{"name", l.Name}, {"payload_class", l.PayloadClass}, {"handler", l.Handler}, {"description", l.Description},
		}
		// The agent loop, the module or the server is the handler; when
		// agent or type did not decode, which it is is unknown, and that
		// error alone is told.
		// A lua listener is refused as such: what it lacks is beside the point.
		if l.YAMLAgent() || l.Type == WasmListener || l.Type == MCPListener || l.Type == LuaListener ||
			r.o.bad[path+".agent"] || r.o.bad[path+".type"] {
			required = []struct{ key, value string }{{"name", l.Name}, {"description", l.Description}}
		}
		for _, req := range required {
			if strings.TrimSpace(req.value) == "" {
				r.missing(path, req.key)
			}
		}
		if l.Name != "" {
			if err := CheckListenerName(l.Name); err != nil {
				r.add(path+".name", "%v", err)
			}
			key := strings.ToLower(l.Name)
			if first, dup := names[key]; dup {
				r.add(path+".name", "duplicate listener name %q (%s); names are case-insensitive", l.Name, r.line(first+".name"))
			} else {
				names[key] = path
			}
		}
		if l.Agent && l.Broadcast {
			r.add(path+".broadcast", "an agent cannot be a broadcast listener (agents need a unique root tag)")
		}
		o.checkListenerType(r, path, l)
		o.checkAgent(r, path, l)
		r.nonNegative(path+".max_concurrent", l.MaxConcurrent)
		r.nonNegative(path+".max_messages_per_turn", l.MaxMessagesPerTurn)
		if l.Timeout < 0 {
			r.add(path+".timeout", "must not be negative, got %s (0 or unset: the default)", l.Timeout)
		}
		for tool, tc := range l.ToolConfig {
			if !containsFold(l.Tools, tool) && !strings.EqualFold(l.Name, tool) {
				checkUnlistedTool(r, path, l.Tools, tool)
			}
			checkToolConfig(r, path+".tool_config."+tool, tc, o.Organism.MaxMessageBytes)
		}
		checkRetention(r, path+".retention", l.Retention, true)
		checkApproval(r, path, l)
		checkMemory(r, path, l)
		checkLoopControl(r, path, l)
	}
	o.checkPeers(r, names)
}

func (o *Organism) checkListenerType(r *reporter, path string, l Listener) {
	if r.o.bad[path+".type"] { // which keys it takes is unknown: its own error is told
		return
	}
	switch l.Type {
	case GoListener, "":
		if !l.Server.IsZero() {
			r.add(path+".server", "server is for mcp listeners (set type: mcp)")
		}
		switch {
		case !l.Payload.IsZero() || !l.Capabilities.IsZero():
			r.add(path+".type", "payload and capabilities are for wasm listeners (set type: wasm)")
		case !l.Response.IsZero() && !l.YAMLAgent():
			r.add(path+".response", "response is for wasm listeners and YAML agents (set type: wasm, or agent: true "+
				"without payload_class and handler)")
		case !l.Response.IsZero():
			checkFieldList(r, path+".response", l.Response)
		}
		if l.Module != "" {
			r.add(path+".module", "only wasm listeners take a module")
		}
		if l.Script != "" {
			r.add(path+".script", "only wasm listeners take a script")
		}
	case WasmListener:
		switch {
		case l.Module != "" && l.Script != "":
			r.add(path+".script", "set module or script, not both")
		case l.Module == "" && l.Script == "":
			r.addAbout(path+".module", path, "a wasm listener needs a module")
		}
		if l.XSD != "" && !l.Payload.IsZero() {
			r.add(path+".xsd", "give xsd or payload, not both")
		}
		checkFieldList(r, path+".payload", l.Payload)
		checkFieldList(r, path+".response", l.Response)
		checkCapabilities(r, path+".capabilities", l.Capabilities, o.Organism.DataDir)
	case MCPListener:
		switch {
		case len(l.Server.Command) > 0 && l.Server.URL != "":
			r.add(path+".server.url", "give command or url, not both")
		case len(l.Server.Command) == 0 && l.Server.URL == "":
			r.addAbout(path+".server", path, "an mcp listener needs server.command or server.url")
		}
		if l.Server.URL != "" {
			if u, err := url.Parse(l.Server.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				r.add(path+".server.url", "want an http:// or https:// URL, got %q", l.Server.URL)
			}
		}
		if l.Server.Timeout < 0 {
			r.add(path+".server.timeout", "must not be negative, got %s", l.Server.Timeout)
		}
		for i, a := range l.Server.Network.Addrs {
			if err := checkNetworkEntry(a); err != nil {
				r.add(childIndex(path+".server.network", i), "%v", err)
			}
		}
	case LuaListener:
		r.add(path+".type", "lua listeners are not supported (the Python reference only proposed them): "+
			"write the listener in Go, or build it as WebAssembly (type: wasm, module: FILE.wasm; README: Write a tool in WebAssembly)")
	default:
		r.add(path+".type", "unknown listener type %q (want go, wasm or mcp)", l.Type)
	}
}

// checkPeers reports peers naming neither a listener nor a gateway.
func (o *Organism) checkPeers(r *reporter, listeners map[string]string) {
	known := make([]string, 0, len(o.Listeners)+len(o.external)+len(o.Gateways))
	for _, l := range o.Listeners {
		known = append(known, l.Name)
	}
	known = append(known, o.external...)
	for _, g := range o.Gateways {
		known = append(known, g.Name)
	}
	for i, l := range o.Listeners {
		for j, peer := range l.Peers {
			if _, ok := listeners[strings.ToLower(peer)]; ok || o.namesPeerBeyondListeners(peer) {
				continue
			}
			path := childIndex(childIndex("listeners", i)+".peers", j)
			suggestion := ""
			if best := closest(peer, known); best != "" {
				suggestion = fmt.Sprintf(" (did you mean %q?)", best)
			}
			r.add(path, "%q names no listener or gateway%s", peer, suggestion)
		}
	}
}

func (o *Organism) checkOOB(r *reporter) {
	b := o.OOB
	switch {
	case o.bindPort < 0:
		r.add("oob.bind", "%q names no valid port (want host, [ipv6] or host:port with a port from 1 to 65535)", b.Bind)
		return
	case o.bindPort > 0 && b.Port != o.bindPort:
		r.add("oob.bind", "names port %d but oob.port is %d", o.bindPort, b.Port)
	}
	if !isLoopback(b.Bind) && !b.AllowRemote {
		r.add("oob.bind", "%q is not a loopback address (the OOB channel is local only: bind it to 127.0.0.1 or ::1, or set oob.allow_remote_oob: true with oob.tls)", b.Bind)
	}
	if !isLoopback(b.Bind) && b.AllowRemote && !b.TLS.Enabled() {
		r.add("oob.tls", "a remote OOB channel (oob.allow_remote_oob) requires oob.tls.cert and oob.tls.key")
	}
	if (b.TLS.Cert == "") != (b.TLS.Key == "") {
		r.add("oob.tls", "cert and key must be given together")
	}
	if b.Port != 0 || b.UnixSocket == "" {
		r.port("oob.port", b.Port)
	}
	if b.Enabled && b.Port == o.Organism.Port {
		r.add("oob.port", "same as organism.port (%d)", b.Port)
	}
}

func (o *Organism) checkMeta(r *reporter) {
	for _, a := range []struct {
		path  string
		value Access
	}{
		{"meta.allow_schema_requests", o.Meta.AllowSchemaRequests},
		{"meta.allow_example_requests", o.Meta.AllowExampleRequests},
		{"meta.allow_prompt_requests", o.Meta.AllowPromptRequests},
	} {
		if !a.value.Valid() {
			r.add(a.path, "unknown access %q (want admin, authenticated or none)", a.value)
		}
	}
}

func (o *Organism) checkGateways(r *reporter) {
	names := map[string]string{}
	// imported maps a tag to the first import of it: two gateways cannot
	// both stand for one root tag (their listeners would collide).
	imported := map[string]string{}
	for i, g := range o.Gateways {
		path := childIndex("gateways", i)
		if strings.TrimSpace(g.Name) == "" {
			r.missing(path, "name")
		} else {
			key := strings.ToLower(g.Name)
			if first, dup := names[key]; dup {
				r.add(path+".name", "duplicate gateway name %q (%s)", g.Name, r.line(first+".name"))
			} else {
				names[key] = path
			}
			for j, l := range o.Listeners {
				if strings.EqualFold(l.Name, g.Name) {
					r.add(path+".name", "%q is also the name of listeners[%d]", g.Name, j)
					break
				}
			}
		}
		if g.RemoteURL != "" {
			if u, err := url.Parse(g.RemoteURL); err != nil || u.Scheme != "wss" || u.Host == "" {
				r.add(path+".remote_url", "want a wss:// URL, got %q", g.RemoteURL)
			}
		}
		if g.TrustedIdentity == "" {
			r.missing(path, "trusted_identity")
		}
		r.nonNegative(path+".queue_limit", g.QueueLimit)
		r.nonNegative(path+".queue_bytes", g.QueueBytes)
		if g.CallTimeout < 0 {
			r.add(path+".call_timeout", "must not be negative, got %s", g.CallTimeout)
		}
		for _, list := range []struct {
			key  string
			tags []string
		}{{"export", g.Export}, {"import", g.Import}} {
			seen := map[string]bool{}
			for j, tag := range list.tags {
				at := fmt.Sprintf("%s.%s[%d]", path, list.key, j)
				switch {
				case !gen.IsNCName(tag):
					r.add(at, "%q is not a payload root tag (an XML name without a prefix)", tag)
				case seen[tag]:
					r.add(at, "%q is listed twice", tag)
				case list.key == "import" && imported[tag] != "":
					r.add(at, "%q is imported already (%s): one gateway per imported tag", tag, r.line(imported[tag]))
				}
				seen[tag] = true
				if list.key == "import" && imported[tag] == "" {
					imported[tag] = at
				}
			}
		}
	}
}

func (o *Organism) checkPlatform(r *reporter) {
	p := o.Platform
	r.positive("platform.context_buffer.max_slots_per_thread", p.ContextBuffer.MaxSlotsPerThread)
	r.positive("platform.context_buffer.max_threads", p.ContextBuffer.MaxThreads)
	r.positive("platform.context_buffer.ttl_hours", p.ContextBuffer.TTLHours)
	r.positiveDuration("platform.context_buffer.note_ttl", p.ContextBuffer.NoteTTL)
	r.positive("platform.context_buffer.max_notes", p.ContextBuffer.MaxNotes)
	r.nonNegative("platform.llm.rate_limit_per_agent", p.LLM.RateLimitPerAgent)
	r.nonNegative("platform.llm.cache_ttl_seconds", p.LLM.CacheTTLSeconds)
	r.nonNegative("platform.llm.max_tokens_per_request", p.LLM.MaxTokensPerRequest)
	r.positiveDuration("platform.thread_ttl", p.ThreadTTL)
}

func (o *Organism) checkJournal(r *reporter) {
	checkRetention(r, "journal.retention", o.Journal.Retention, false)
	r.positiveDuration("journal.sweep_interval", o.Journal.SweepInterval)
}

func (o *Organism) checkBudgets(r *reporter) {
	r.nonNegative("budgets.thread_tokens", o.Budgets.ThreadTokens)
	r.nonNegative("budgets.agent_tokens", o.Budgets.AgentTokens)
	r.positive("budgets.repeat_limit", o.Budgets.RepeatLimit)
	if !o.Budgets.OnExceed.Valid() {
		r.add("budgets.on_exceed", "unknown policy %q (want stop or warn)", o.Budgets.OnExceed)
	}
}

// checkRetention checks a retention built in code; values read from YAML
// were already checked by Retention.UnmarshalYAML.
func checkRetention(r *reporter, path string, ret Retention, optional bool) {
	switch ret.Policy {
	case "":
		if !optional {
			r.add(path, "must be set")
		}
	case RetainForever, PruneOnDelivery:
		if ret.Days != 0 || ret.Window != 0 {
			r.add(path, "%s takes no days or window", ret.Policy)
		}
	case RetainDays:
		if ret.Days <= 0 || ret.Window != 0 {
			r.add(path, "retain_days: want a positive number of days, got %d", ret.Days)
		}
	case Window:
		if ret.Window <= 0 || ret.Days != 0 {
			r.add(path, "window: want a positive duration, got %s", ret.Window)
		}
	default:
		r.add(path, "unknown policy %q (want retain_forever, prune_on_delivery, retain_days or window)", ret.Policy)
	}
}

// isLoopback accepts "localhost" and loopback IP addresses.
// validBind reports an address the main bus can listen on: an IP
// address (IPv6 with or without brackets) or localhost.
func validBind(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// mountedTool reports whether name is <mcp listener>.<tool>: a listener an
// mcp listener registers at assembly, once its server lists its tools.
func (o *Organism) mountedTool(name string) bool {
	for _, l := range o.Listeners {
		if l.Type == MCPListener && len(name) > len(l.Name)+1 && strings.EqualFold(name[:len(l.Name)+1], l.Name+".") {
			return true
		}
	}
	return false
}

// NamesPeer reports whether a listener's peers may name name in this
// configuration: one of its listeners or gateways, a tool of one of its
// MCP mounts, or a listener given outside it (LoadWith). A running organism also has the listeners added since
// (register-listener); it checks those itself.
func (o *Organism) NamesPeer(name string) bool {
	if _, ok := o.Listener(name); ok {
		return true
	}
	return o.namesPeerBeyondListeners(name)
}

// namesPeerBeyondListeners is NamesPeer for what is not a configured
// listener: a listener given outside the configuration, a gateway or a
// mounted tool.
func (o *Organism) namesPeerBeyondListeners(name string) bool {
	if o.namesExternal(name) {
		return true
	}
	if _, ok := o.Gateway(name); ok {
		return true
	}
	return o.mountedTool(name) || o.callableCall(name)
}

// callableCall reports whether name is <listener>.call of a listener that
// declares callable: (CallName): a listener the organism registers at
// assembly beside it.
func (o *Organism) callableCall(name string) bool {
	for _, l := range o.Listeners {
		if !l.Callable.IsZero() && strings.EqualFold(name, CallName(l.Name)) {
			return true
		}
	}
	return false
}
