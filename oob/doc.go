// Package oob is the privileged out-of-band channel: signed
// privileged-msg.xsd (version 1.1) requests on a loopback WebSocket and/or a
// Unix socket, answered with <privileged-response> and, for subscriptions,
// <privileged-push> frames. The main bus never carries these messages.
//
// # Transport
//
// One WebSocket connection carries any number of requests, answered in
// order; each text frame is one complete document. The TCP socket (oob.bind,
// default 127.0.0.1, oob.port, default 8766) accepts loopback peers only: a
// non-loopback peer is closed at accept and logged as a security event. A
// non-loopback bind needs allow_remote_oob: true and oob.tls, and then serves
// TLS 1.3. The Unix socket (oob.unix_socket) is created mode 0600 inside a
// directory only its owner can enter (created 0700 when missing; an existing
// directory that group or others may enter, or another user owns, is refused
// and no socket is created). A WebSocket handshake carrying an Origin header
// (a browser page) is refused. A connection must deliver its first request
// signed by the owner within Options.AuthTimeout (5 s) of connecting, and at
// most Options.MaxUnverified (64) connections wait for theirs at once: past
// that the oldest is closed (a security event each).
//
// # Signature
//
// The XSD fixes the shape: <privileged-msg version="1.1"> holds <payload
// id=… timestamp=…> with one operation, then <signature algorithm="ed25519">.
// The signature is Ed25519 by the owner key (oob/keys) over the exclusive
// C14N 1.0, without comments, of the <payload> element — the subtree, so id
// and timestamp, which sit on it, are covered — base64 in <signature>. Since
// exclusive C14N renders only the namespaces the subtree uses, the signed
// bytes do not depend on the root's declarations (SignRequest builds such a
// request).
//
// A request is accepted when, in this order: it is at most Options.MaxBytes;
// it parses as a privileged-msg in NS; it carries a non-empty signature
// (else UNSIGNED); it is valid against privileged-msg.xsd (else
// MALFORMED_REQUEST); the signature verifies with the owner's public key
// (else INVALID_SIGNATURE); its timestamp is within ±Options.Window (60 s) of
// the organism's clock (else STALE_REQUEST); and its signature was not
// accepted before (else REPLAYED). The replay cache remembers each accepted
// signature until its timestamp leaves the window — after that the timestamp
// check refuses it anyway — and holds at most Options.ReplayMax entries:
// full of live ones, it refuses new requests (BUSY) rather than forget one.
// Persisted (ReplayCache.Persist, which xmlpipe run does with the
// organism's store), it records each accepted signature on disk before the
// operation runs and loads them at start, so a request captured before a
// restart is refused after it too; a signature it cannot record is refused
// (INTERNAL).
// Every refusal is an <error> response and a slog Warn "security event: …"
// with security=true.
//
// # Operations
//
// list-listeners, get-status, get-listener-schema (xsd or example),
// inject-message (a new conversation, or the thread given), get-thread-history
// (from the journal, paged; each hop has a thread of its own, and
// conversation=true reads every hop of the thread's conversation),
// subscribe-thread / unsubscribe (thread-event
// pushes on the subscribing connection; system-event pushes for shutdown and
// config changes), kill-thread (the conversation a thread belongs to stops
// for good: running handlers cancelled, queued messages dropped; NOT_FOUND
// for a thread the organism never knew, ALREADY_ENDED — nothing changed —
// for one whose conversation no longer runs), cancel-thread (its answer in
// flight stops and the conversation goes on: its owner may continue it;
// NOT_FOUND, or ALREADY_ENDED when nothing of it is in flight),
// list-approvals / decide-approval (the calls waiting for a human, listed
// with their held payload and decided on the owner's behalf as "oob",
// through Target.Approver; ALREADY_DECIDED for one that is not pending),
// halt / resume (the emergency
// stop), reload (organism.yaml read again and put in force in place, as
// SIGHUP does, through Target.Reloader: acknowledged once applied, or
// RELOAD_REFUSED naming file:line while the running configuration stays),
// get-organism-graph (mermaid, graphviz, json), get-config /
// set-config (log_level is the one runtime-mutable key; the others are
// refused by name with IMMUTABLE), shutdown (graceful: drains within
// timeout-seconds; immediate: running handlers cancelled, queued messages
// left undelivered in the journal for recovery; acknowledged before the
// organism stops), and
// register/unregister-remote-gateway (stored in Target.GatewayFile for
// federation to connect), register-listener (every conversation that starts
// from then on may reach the new listener, while running conversations keep
// the routing table they started with) and unregister-listener (no new
// conversation reaches it; the conversations already running keep reaching
// it until they complete, and the answer comes once they and its running
// handlers are done with it), each with a listener-event push. Listeners
// changed this way are not written to organism.yaml. Those registered are
// stored in Target.ListenerFile (xmlpipe run: data/oob-listeners.json),
// registered again at the next start and kept by reloads, which leave
// them alone; unregister-listener forgets them. A configured listener
// that was unregistered comes back with the next reload or restart.
//
// # Registering listeners
//
// privileged-msg.xsd is fixed: RegisterListener says what to run with
// <class> and <handler> only. Two reserved classes (ClassWasm, ClassAgent)
// name a listener kind, and <handler> then carries that kind's one
// argument; any other class is a catalog payload class:
//
//   - <class>handlers.hello.ShoutedResponse</class>
//     <handler>handlers.hello.handle_response_print</handler>: a catalog
//     listener, class and handler named in the listener catalog (Python
//     dotted names accepted). is-agent marks it an agent (unique root tag,
//     peers enforced).
//   - <class>wasm</class><handler>tools/calc.wasm</handler>: a WebAssembly
//     listener from the module at that path, relative to the running
//     organism's file's directory like organism.yaml's module: paths (not
//     to the directory the request was sent from). Its payload
//     (and response) contract comes from the module's describe export, as
//     `xmlpipe wasm check` reads it; <description> is its description. It
//     runs in the same wazero sandbox as a configured one, with the default
//     capabilities (64 MiB, 5 s per call, no filesystem, no environment).
//     Because a request must not load arbitrary files, the module must lie
//     inside the organism's directory tree — as written and once symbolic
//     links are resolved — and be a regular *.wasm file of at most 64 MiB
//     starting with the WebAssembly magic; anything else is refused with
//     INVALID_ARGUMENT. Put the modules you mean to load beside
//     organism.yaml (say in tools/).
//   - <class>agent</class><handler>You are a critic…</handler> with
//     <is-agent>true</is-agent> (or without is-agent; false is refused): an
//     LLM agent built as an `agent: true` listener of organism.yaml without
//     payload_class and handler — its text payload (<CriticTask><Text> for
//     a listener named critic), the agent loop. The handler text is its prompt; a prompt that names
//     blocks of the prompts: section ("critic", "who & style") resolves to
//     them as in organism.yaml. <peers> are whom it may address,
//     <max-concurrent> its workers; model, limits and budgets come from
//     the llm: and budgets: sections. With no usable LLM backend the
//     request is refused with NOT_SUPPORTED, naming what to configure.
//
// A removed WASM listener's module is closed once its running handlers
// are done (at shutdown, when unregister-listener timed out waiting).
// An agent's model, temperature or tools, and a WASM listener's
// capabilities or inline contract, have no element in the XSD: give those
// in organism.yaml and reload (SIGHUP, the bus API's reload or the reload
// operation); Go callers
// can use organism.Organism.AddListener, which takes any config.Listener.
package oob
