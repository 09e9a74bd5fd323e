// Package bus is the organism's main bus: one HTTPS server (TLS 1.3; plain
// HTTP only in insecure dev mode) carrying the Python reference server's
// endpoints, the REST/WS API of its agentserver_api_spec, and a raw-XML
// WebSocket for envelope clients. Every message that enters here goes
// through Pump.InjectAs — the same stages as any other message, sent as the
// client's session (see Identity).
//
// # Authentication
//
// POST /auth/login takes {"username","password","totp"} and answers
// {"token","username","role","expires_at","expires_in"} ("expires_in": the
// seconds the session has left, by the server's clock) (400 {"error":"Invalid JSON"},
// {"error":"Credentials required"} or, for a body without "totp" — the
// reference's {"username","password"} — {"error":"TOTP code required"},
// which is not checked further and costs no lockout; 401
// {"error":"Invalid credentials"}; 429
// {"error":"Too many failed login attempts"} or {"error":"Too many login
// attempts in progress"}, both with Retry-After in seconds). Failed logins
// count per user name and address pair and per address: 5 within a minute
// lock that pair or address out for a minute, doubling with each
// consecutive lockout up to an hour, so one address cannot lock a user out
// for everyone. An attempt takes its place in that budget before its
// password is checked, so a burst of parallel attempts gets no more
// checks than a sequence. At most 2 argon2id checks (64 MiB each) run at
// once with 8 logins waiting; one more is refused at once (the second 429).
// The auth: section of organism.yaml sets these limits. Every other path
// but GET /health and GET /bus needs the token (a wrong method on /health or
// /auth/login is answered 405 {"error":"Method Not Allowed"} without one,
// as the reference's router answers it):
//
//	Authorization: Bearer <64 hex>
//
// (401 {"error":"Missing Authorization"} / {"error":"Invalid token"}).
// Browsers, which cannot set headers on a WebSocket, offer the token as a
// subprotocol pair instead — Sec-WebSocket-Protocol: bearer, <token> — and
// the server selects "bearer". Tokens in query strings (?token=) are not
// accepted: URLs end up in logs. POST /auth/logout revokes the token
// ({"message":"Logged out"}); GET /auth/me answers
// {"username","role","expires_at","expires_in"} (under --insecure-dev, to any request,
// also "token" and "insecure_dev":true: the dashboard then asks for no
// login); GET /health answers {"status":"ok"}, at
// once after a restart: while the organism re-delivers the messages a crash
// left unhandled it adds {"recovery":{"active":true,"seq":…,"until":…,
// "redelivered":…,"skipped":…}} (seq reaches until when it is done).
// Roles: viewers read, operators also send, inject, kill and cancel their
// own conversations, admins also kill or cancel anyone's, pause, resume,
// reload and stop
// (403 {"error":"Forbidden"}). A socket
// re-checks its session every minute and is closed with 1008 "Session
// expired" once the token is revoked or expired.
//
// # Identity
//
// A message's sender is fixed by the session that sent it, never by the
// client: "websocket:<user>" on /bus and for a /ws target send,
// "console:<user>" for a /ws raw send ("@target text"), "api:<user>" for
// REST and stream injects (in insecure dev mode every session is user
// "dev"). These are the user's session identities. The
// pump checks every message after reading its envelope and before it joins
// a thread or is journaled:
//
//   - its <from> must be the session's identity (only /bus clients write
//     their own envelopes; the other ingresses build it);
//   - its <thread> (REST and stream: thread_id) may name a thread of a
//     conversation the user began under any of its session identities —
//     including every thread the organism handed back to it in a reply — or
//     an id the organism has never seen, which begins a new conversation.
//     Any other thread, live or ended (the journal remembers ended ones), is
//     another party's.
//
// A message that fails either check is refused like any message with a
// forbidden sender: a <huh> with the canned text "Invalid envelope" (REST:
// 422 {"error":"Invalid envelope",…}; stream: {"event":"error",…}). It is
// logged as a security event (slog Warn, security=true, with the user, the
// session identity and the claimed from and thread) and journaled only as
// a <huh> record from the session's identity on no thread: never under the
// claimed sender, never on the named thread, whose status and messages stay
// as they were. The <huh> a /bus client gets for it is on a fresh thread
// id, addressed to its own identity.
//
// # The /ws JSON protocol
//
// GET /ws upgrades to a WebSocket of JSON text frames, each with a "type".
// The wire package holds the Go types of every frame. On connect:
//
//	{"type":"connected","username":"alice","role":"operator"}
//
// A request may carry an "id" (any JSON value); its reply echoes it, so a
// client can match replies while events interleave. Requests and replies:
//
//	{"type":"ping"}                      → {"type":"pong"}
//	{"type":"status"}                    → {"type":"status","threads":3,"organism":"hello-world",
//	                                        "uptime_seconds":12.5,"listeners":6,"slots":9,
//	                                        "processed":42,"failed":0,"in_flight":0}
//	                                        (+ "halted":"agents"|"all" while halted)
//	{"type":"listeners"} (or "targets")  → {"type":"listeners","listeners":["system.boot",…,"greeter"],
//	                                        "details":[{"name":"greeter","description":"…","agent":true,
//	                                        "broadcast":false,"root_tag":"Greeting"},…]}
//	{"type":"threads"}                   → {"type":"threads","threads":[{"id":"90ab…","ended":true,"depth":0,
//	                                        "slots":3,…},{"id":"6f1c…","depth":3,"slots":2,"idle_seconds":0.4,
//	                                        "last_from":"shouter","last_to":"response-handler"}]}
//	{"type":"monitor","prefix":"6f1c"}   → {"type":"monitor","prefix":"6f1c","threads":[{"id":"6f1c…",
//	                                        "slots":[{"from":"greeter","to":"shouter",
//	                                        "payload_type":"GreetingResponse",
//	                                        "payload":"<GreetingResponse>…</GreetingResponse>","timestamp":"…"}]}]}
//	{"type":"send","raw":"@greeter Dan"} → {"type":"sent","thread_id":"6f1c…","target":"greeter"}
//	{"type":"send","target":"greeter","content":"Dan"} (or "text", or "message") → the same
//	{"type":"send","raw":"@greeter {\"Name\":\"Dan\"}"} → the same (a JSON object of fields)
//	{"type":"send","raw":"@greeter <Greeting><Name>Dan</Name></Greeting>"}
//	                                     → the same (the payload element's XML)
//	{"type":"send","target":"greeter","payload":{"name":"Dan"}}
//	                                     → the same ("payload" as POST /api/v1/inject takes it:
//	                                        an object of fields or a string of the element's XML)
//	{"type":"send","target":"poet","content":"and again?","thread_id":"6f1c…"}
//	                                     → {"type":"sent","thread_id":"6f1c…","target":"poet"}
//	{"type":"usage"}                     → {"type":"usage","llm":true,"agents":[{"name":"poet",
//	                                        "prompt_tokens":22,"completion_tokens":14,"requests":2}],
//	                                        "backends":[…],"calls":[Call…]}
//	{"type":"subscribe","events":["output","complete"]}
//	                                     → {"type":"subscribed","events":["complete","output"]}
//
// threads lists, for a durable organism, the journal's recent conversations
// that are no longer live ("ended": true, slots = their journaled messages;
// from before a restart too) before the live threads, as the in-process
// console's /threads does.
//
// send builds the target listener's payload exactly as the console does
// from the text after "@target" in raw (organism.StructuredPayload): a JSON
// object ({…}) gives the payload's fields, matched by Go name, XML name or
// snake_case; an XML element (<Name…) is the payload itself; any other
// text goes into the payload's text field (its only string field, else
// Message, Text or Name). In the target form, "content" (or "text", or
// "message") is always such text, and "payload" — an object of fields or a
// string of the element's XML, as POST /api/v1/inject takes it — carries a
// structured payload. It sends the message
// from "console:<user>" (raw form) or "websocket:<user>" (target form), as
// the reference builds from_id, on a new conversation — or, with
// "thread_id", on that conversation: one of the user's own (see Identity),
// live or ended, continues (unless it was killed: a kill is final, and the
// send is answered {"type":"error","error":"Conversation was killed; start
// a new one","code":"killed"}), and an agent finds its history there (the
// history of a conversation a client began with an agent is kept after it
// completes, until the context buffer's TTL); an id the organism never used
// begins a new conversation under it; another party's is refused like any
// foreign thread, and nothing of it is routed to the socket. "sent" always
// names the target and the conversation (the same id). usage answers the
// LLM tokens per agent and backend and the organism's newest calls (see
// GET /api/v1/usage/calls for a Call; "llm":false when no backend is
// usable). A failed request is answered with an error frame:
//
//	{"type":"error","error":"Forbidden: role viewer cannot send","code":"forbidden"}
//	{"type":"error","error":"Unknown target: nobody. Available: ['system.boot', …, 'greeter']",
//	 "code":"unknown_target"}   (the listeners command's names, as the reference words it)
//	{"type":"error","error":"Invalid thread_id: want a lower-case UUID","code":"bad_request"}
//	{"type":"error","error":"Invalid envelope","code":"rejected","diagnostics":[…]}   (another party's thread_id)
//	{"type":"error","error":"Cannot create payload for system.todo","code":"no_text_field"}
//	{"type":"error","error":"Invalid JSON payload: unexpected end of JSON input","code":"bad_payload"}
//	{"type":"error","error":"Invalid payload for greeter: unknown field \"Age\" (the fields are Name)",
//	 "code":"bad_payload"}
//	{"type":"error","error":"Invalid payload structure","code":"rejected","diagnostics":["route: …"]}
//	{"type":"error","error":"Unknown message type: dance","code":"bad_request"}
//	                                     (a type that is no string, {"type":5}: "Unknown message type: 5")
//
// and, when the organism is too busy to take the message (see Busy below):
//
//	{"type":"error","error":"Organism busy: listener shouter busy","code":"busy","retry_after":2}
//
// with the reference's texts for the rest: "Invalid JSON" ("Invalid JSON:
// not valid UTF-8" for a frame that is not UTF-8 or escapes half a
// surrogate pair, \ud800 alone, which a JSON decoder would silently turn
// into U+FFFD), "Empty message",
// "No target specified. Use @target message format.", "Missing target",
// "Missing content", "Missing prefix" (monitor), "Pipeline not available"
// (code "unavailable": the organism is shutting down).
//
// After "sent", the socket receives the events of that conversation (and of
// no other), never before its "sent". thread_id is always the conversation
// id "sent" returned; timestamps are RFC 3339 with nanoseconds, UTC:
//
//	{"type":"message","thread_id":"6f1c…","from":"greeter","to":"shouter","listener":"shouter",
//	 "payload_type":"GreetingResponse","payload":"<GreetingResponse><Message>Hello, Dan!</Message>…",
//	 "timestamp":"2026-03-01T12:00:00.123456789Z"}
//	{"type":"output","thread_id":"6f1c…","from":"shouter","text":"HELLO, DAN!"}
//	{"type":"reply","thread_id":"6f1c…","from":"calc","to":"console:alice","payload_type":"Result",
//	 "payload":"<Result><Text>4</Text></Result>","text":"4","timestamp":"…"}
//	{"type":"huh","thread_id":"6f1c…","from":"core","to":"websocket:alice","error":"Message could not be processed",
//	 "diagnostics":["handler: OriginalSender is empty: it must name the listener the shouted greeting goes to"],
//	 "told":"OriginalSender is empty: it must name the listener the shouted greeting goes to","timestamp":"…"}
//	{"type":"system_error","thread_id":"6f1c…","from":"system","to":"greeter",
//	 "error":"Message could not be delivered. Please verify your target and try again.","timestamp":"…"}
//	{"type":"dead_letter","thread_id":"6f1c…","from":"greeter","to":"shouter",
//	 "error":"Message could not be delivered","timestamp":"…"}
//	{"type":"complete","thread_id":"6f1c…","timestamp":"…"}
//	{"type":"delta","thread_id":"6f1c…","agent":"poet","text":"Rain on tin"}
//	{"type":"delta","thread_id":"6f1c…","agent":"poet","text":" roofs.","end":true}
//
// Durability: "sent" (and a 2xx from inject, and acceptance on /bus) comes
// only once the message is committed to the journal — a crash after it
// loses nothing; acknowledgements share group commits, so they wait a few
// milliseconds at most. Every event frame, too, is sent only once the
// envelope it names (and everything journaled before it) is committed, and
// carries "message_id": the SHA-256 of its canonical envelope (the REST
// API's message id), or for frames without one (output, complete, failures
// told to the client) a digest of its kind and fields and of the turn of
// the conversation (each message sent on a continued thread begins a new
// one, with new completion ids). A message re-handled
// after a crash yields frames with the same ids: deduplicate by message_id.
//
// message is every envelope of the conversation accepted and delivered to a
// listener (the first one is the client's own, canonicalised), with its
// canonical payload XML; output is a line a listener printed (the console's
// "[shouter] HELLO, DAN!") or an agent's interim text; reply is a message addressed back outside the
// organism; huh, system_error and dead_letter are failures on the
// conversation; complete says nothing of it is in flight any more.
//
// A failure's text is canned and generic (DESIGN §2): a huh says
// "Message could not be processed" whatever the handler's error or panic
// was, a dead letter "Message could not be delivered". Its details — the
// handler's error chain or panic value, which may name URLs, paths or
// listeners, a meta question's refusal reason, a dead letter's reason —
// go to the log, the journal and the OOB channel, and to the users who
// run the organism: an operator or admin without a security profile reads
// them in the huh's "diagnostics" and the dead letter's "error" (as
// {"type":"dead_letter",…,"error":"conversation killed: the handler's
// answer is dropped"}). Every other user — a viewer, anyone confined to a
// profile — reads two kinds of detail only: the diagnostics of their own
// message that the organism refused (the same an inject's 422 gives), and
// the text of a handler's *xmlpipe.InputError, which the handler wrote for
// its sender (as shouter's above, for a payload without OriginalSender).
// A huh addressed to the session's identity carries that text as "told"
// too, whether or not the user sees details: it says why, in the words
// meant for the sender (a console prints it after the canned text — why
// a remote peer could not be reached, say — without --verbose).
//
// subscribe chooses the event frames the socket gets from then on, for
// every conversation it has sent on: any of message, output, reply, huh,
// system_error, dead_letter, refusal, complete, delta and the governance
// pushes approval, approval_decided, guardian_alert, halted and resumed.
// Until a socket subscribes it gets them all; an empty list restores that;
// an unknown type is answered {"type":"error","error":"Unknown event type:
// dance","code":"bad_request"} and changes nothing. Replies to requests
// ("sent", "error", …) are never filtered. Events a socket did not subscribe
// to cost it nothing: they are dropped before they are queued or encoded,
// so a client that only waits for its answers (output, reply) should
// subscribe to just those.
//
// delta is the text an LLM agent's model is writing on the conversation
// (any agent of it, peers called on the way too), as it arrives and in
// order: the pieces of a stream that arrive while its frame still waits in
// the socket's queue join that frame (at most 16 KiB of text a frame), so
// a client gets a frame per write however fast the model writes, never one
// per token. The last frame of the model's reply has "end":true (it may
// carry text); text the reply makes messages of (XML to a peer) is not
// streamed. The agent's answer then comes as its reply or message frame,
// the journaled envelope, whole and unchanged: a client that ignores delta
// frames loses nothing. A reply frame whose text the socket's deltas of
// that agent (its stream ended last) already carried, whole, says
// "streamed":true, and so does the output frame of an agent's interim text
// (what it wrote beside a tool call, or before a message to a peer): a
// client that renders deltas skips their text and shows it once. Without
// the mark — a socket not subscribed to delta, text that differs from what
// streamed — a client shows the frame's text. Deltas follow the events before them (they pass the
// same durability gate) but are not journaled: they carry no message_id and
// are not sent again after a crash. Only the sockets that get the
// conversation's events get its deltas.
//
// # The raw XML bus: GET /bus
//
// A WebSocket of <message> envelopes in both directions. It authenticates
// with the bearer token (header or subprotocol, operator or admin). Without
// one, the socket is closed after its first frame with 1008 "Legacy TOTP
// login disabled; use a bearer token" — unless organism.yaml sets
// auth.legacy_totp_login: true (Options.LegacyTOTPLogin), which accepts
// the reference's legacy first frame
//
//	<authenticate totp="123456"/>
//
// within 15 s (repaired if it is not well-formed), whose code is tried
// against every user's TOTP secret: a code alone, no user name and no
// password, which is why it is off by default. Its failures count against
// the address like failed logins and close the socket with 1008 and
// exactly the reference's reasons: "First message must be <authenticate/>",
// "Missing TOTP code", "Invalid TOTP", "Invalid/tampered XML",
// "Authentication timeout" (and "Forbidden" for a viewer).
//
// Every later frame goes through Pump.InjectAs as "websocket:<user>": its
// <from> must be exactly that, and its <thread> a thread of the user's own
// conversations or a new id (see Identity). The client gets back, as
// canonical envelopes, every message a listener emits on its conversations,
// the replies addressed to it, and the <huh>/SystemError messages sent to
// listeners on them. /bus has no form for an agent's streamed text: it
// carries only envelopes the pump validated and journaled, and a piece of
// text is neither; the agent's answer arrives whole, as its envelope. A
// frame the organism refuses gets a <huh> envelope from "core" with the
// canned text and the frame in <original-attempt>:
//
//	<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>core</from><to>client</to>
//	<thread>6f1c…</thread></meta><huh xmlns="https://xml-pipeline.org/ns/core/v1">
//	<error>Malformed message</error><original-attempt>dGhpcyBpcyBub3QgeG1s</original-attempt></huh></message>
//
// A frame that is not well-formed XML but can be repaired (a NUL or other
// character XML forbids removed, "a\x00b" becoming "ab", or markup the
// repair path fixes) is accepted as repaired, as DESIGN §3 states:
// the repair is recorded, not reported on the socket. The log has it (slog,
// with the diagnostics), the journal keeps the diagnostics with the entry,
// and GET /api/v1/threads/{id}/messages shows the message with
// "repaired":true and its canonical payload — what the listener got. A
// client that must not lose a byte sends well-formed XML: a strict parse
// changes nothing but the canonical form.
//
// A privileged message (root or payload in the privileged-msg namespace) is
// dropped and logged as a security event (slog Warn, security=true); the
// client gets only a generic <huh> ("Message could not be processed", no
// original attempt). A frame the organism is too busy to take (see Busy)
// gets a <huh> "Organism busy; retry in 2 s" on a fresh thread id, with the
// frame in <original-attempt>; it names no reason, so a busy listener
// reads like any other: send the frame again later.
//
// # The REST/WS API: /api/v1
//
//	GET  /api/v1/organism                 {"name","status","uptime_seconds","agent_count","active_threads",
//	                                       "total_messages","failed","in_flight"} (with metrics also
//	                                       "handler_seconds_sum","handler_count": the handler timings observed);
//	                                       active_threads counts the threads whose conversation runs
//	GET  /api/v1/organism/config          organism.yaml as loaded, secrets redacted
//	GET  /api/v1/agents                   {"agents":[Agent…]}
//	GET  /api/v1/agents/{name}            Agent: {"name","description","is_agent","broadcast","peers",
//	                                       "payload_class","root_tag","state","current_thread",
//	                                       "queue_depth","active","handled","last_activity",
//	                                       "last_error","last_error_at"}
//	GET  /api/v1/agents/{name}/config     the listener's entry, secrets redacted
//	GET  /api/v1/agents/{name}/schema     the payload XSD (application/xml)
//	GET  /api/v1/threads                  {"threads":[Thread…],"limit","offset","next"}; ?limit=50&offset=0
//	                                       &status=active|completed|error|killed|cancelled|denied
//	                                       &agent=NAME&since=RFC3339; ?before=end|SEQ pages by cursor
//	                                       ("next" of the page before), a bounded walk a page: a
//	                                       page may be short, "next" absent at the journal's start
//	GET  /api/v1/threads/{id}             Thread: {"id","conversation","owner","status","participants",
//	                                       "message_count","created_at","last_activity","last_from",
//	                                       "last_to","payload_types","error"}
//	GET  /api/v1/threads/{id}/messages    {"messages":[Message…]}; ?scope=conversation for every
//	                                       thread of its conversation; limit, offset; ?after=SEQ
//	                                       only those whose "seq" is above SEQ (a cursor: the
//	                                       journal is read from SEQ on, so polling with the last
//	                                       seq seen reads only what is new); "history_gone":
//	                                       {"reason":"ttl"|"evicted","notice","last_active","removed",
//	                                       "since_seq"} when the agent's earlier history of the
//	                                       conversation was removed (since_seq: the message its memory
//	                                       begins at; absent until the conversation goes on), and
//	                                       "earlier":[…] the removals before it, oldest first, whose
//	                                       since_seq is above ?after=
//	GET  /api/v1/threads/{id}/context     {"thread_id","segments":[Segment…],"tiers":{"expanded","folded",
//	                                       "evicted"},"byte_size","token_estimate"}: the thread's context
//	                                       as its agent's librarian tiers it; Segment: {"id","index","slots",
//	                                       "content_type","tier","relevance","scored","summary","summary_by",
//	                                       "byte_size","token_estimate","from","payload_type","time",
//	                                       "changed"}; ?content=full adds "content" (the original bytes)
//	GET  /api/v1/messages                 newest first; ?limit&offset, ?after=SEQ (ascending),
//	                                       ?thread=ID, ?agent=NAME, ?since=RFC3339
//	GET  /api/v1/usage/calls              {"calls":[Call…]}: the newest LLM calls, oldest first;
//	                                       ?thread=ID (a conversation or one of its threads), ?limit=20
//	                                       (1 to 1000); 400 {"error":"Invalid thread: …"} / "Invalid limit: …"
//	POST /api/v1/inject                   operator: {"to":"greeter","payload":{"name":"Dan"}} or
//	                                       {"to":"greeter","payload":"<Greeting><Name>Dan</Name></Greeting>",
//	                                       "thread_id":"…"} → {"thread_id","message_id"}, and "notice"
//	                                       when it begins again the history of an agent's conversation
//	                                       that expired or max_threads dropped (once); 409
//	                                       {"error":"Conversation was killed; start a new one"} when
//	                                       thread_id names a killed conversation
//	POST /api/v1/threads/{id}/kill        operator (their own conversation; another's is 404), admin (any)
//	                                       → {"thread_id","status":"killed"}; 409 {"error":"Conversation
//	                                       already completed|killed","thread_id"} when it no longer runs
//	                                       (nothing changes); 404 for a thread never used. A kill is
//	                                       final: the conversation reads "killed" after restarts too
//	                                       and is never continued
//	POST /api/v1/threads/{id}/cancel      operator (their own conversation; another's is 404), admin (any)
//	                                       → {"thread_id","status":"cancelled"}: its answer in flight
//	                                       stops (running handlers cancelled with xmlpipe.ErrCancelled,
//	                                       queued messages dead letters "answer cancelled") and the
//	                                       conversation goes on — its owner may continue it; 409
//	                                       {"error":"Conversation is not answering: nothing to
//	                                       cancel","thread_id"} when nothing of it is in flight; 404
//	                                       for a thread never used
//	POST /api/v1/agents/{name}/pause      admin → Agent
//	POST /api/v1/agents/{name}/resume     admin → Agent
//	POST /api/v1/organism/reload          admin → 200 {"status":"reloaded"} once applied; 422
//	                                      {"error":"reload refused: …"} when the new configuration
//	                                      cannot be applied (the old one keeps serving); 501 without a Controller
//	POST /api/v1/organism/stop            admin → 202 {"status":"stopping"} (501 without a Controller)
//
// (reload and stop are 501 too when the Controller answers ErrNotSupported.)
// An agent's state is the first that holds of: "paused" (stopped by pause),
// "halted" (stopped by the emergency halt, POST /api/v1/organism/halt),
// "processing" (a handler runs; current_thread is the thread it works on,
// else null), "error" (its last handling failed and none finished since;
// last_error and last_error_at describe the most recent failure — the
// handler's error for an operator or admin without a profile, the canned
// "Message could not be processed" for anyone else), "waiting"
// (it forwarded a message — a live thread whose caller, the second-to-last
// segment of the thread's call chain, is this agent — and that conversation
// is still in flight) and "idle".
//
// Threads and messages come from the journal (503 {"error":"Journal not
// available"} for an in-memory organism). The thread list gives each row's
// participants as /threads/{id} does (senders, addressees and receiving
// listeners of its messages, in order of appearance). A conversation spans
// threads (a forward opens a child thread); each Thread names its
// conversation, and its "owner": the user who began that conversation
// (through REST, /ws or the console), by the same rule as decides who may
// continue, cancel and kill it — "" when no user began it (a listener, a
// federation peer, a script). A user with a profile is not listed the
// threads it may not see, so it learns no owner of those. Thread status:
// killed (through the API), error (a <huh>, SystemError or other failure
// on it — a denial, an expired approval and a cancel's
// dropped messages are none), active (its conversation has a message in
// flight), cancelled (its latest answer was cancelled and nothing ran
// since), denied (a call of its latest answer was denied — by a human, or
// by policy: a constitution deny rule, memory law — and the agent got the
// refusal), expired (a call of its latest answer waited for a human who
// did not decide in time), else completed; the stream's thread_updated
// reads the same rule (error too: a conversation with a failure on its own
// thread ends error, as REST reads it). A Message is {"id","seq","thread_id","conversation","direction","kind",
// "from","to","listener","payload_type","payload","timestamp"} (and
// "repaired":true for a message accepted only after a repair;
// "outcome":"denied" for the refusal a denied approval or a policy rule
// answered with, "outcome":"expired" for the refusal of an approval that
// timed out and "outcome":"cancelled" for a message a cancel dropped — a
// decision, not a failure, as the thread status reads them;
// "withheld":"memory" and payload "" for what an agent asked to remember
// (a message to or from system.memory), which only the conversation's
// owner and admins read; and for an
// entry that is not a message — kind huh, system-error, dead-letter,
// refusal, decision — "diagnostics":["envelope line 1 /not: …"], why, one
// reason a string, as the journal recorded them: a message refused before
// its payload was known has payload_type "" and its raw input as payload;
// as on /ws, only an operator or admin without a profile reads a
// handler's error or a dead letter's reason there — the others read of a
// huh or SystemError only what the stages reading a message found, and a
// dead letter as "Message could not be delivered");
// its id is the SHA-256 (hex) of the canonical envelope — the journal's
// checksum, and the message_id inject returns. An inject payload object maps keys onto the
// listener's payload fields by Go name, XML name or snake_case; the message
// is sent from "api:<user>"; a thread_id must name a thread of the user's
// own conversations or a new id (see Identity); naming one of the user's
// conversations continues it, as a /ws send with thread_id does.
//
// A Call is one LLM call — one attempt of an agent's model call at one
// backend, completed or failed:
//
//	{"id":7,"time":"…","conversation":"6f1c…","thread":"6f1c…","agent":"poet","backend":"local",
//	 "model":"qwen2.5","attempt":1,"prompt_tokens":11,"completion_tokens":7,"wait_ms":0.02,
//	 "first_token_ms":120.5,"duration_ms":830.1,"streamed":true,"finish_reason":"stop",
//	 "tool_calls":0,"error":"…","envelope_seq":42}
//
// error is set (finish_reason and the tokens empty) for a failed call;
// usage_estimated (absent when false) marks tokens that are an estimate, 4
// bytes a token: those of a call stopped mid-stream, or of a backend that
// reports no usage; first_token_ms is 0 when no text was streamed; envelope_seq is the
// journal seq of the envelope the call produced — the first message its
// agent sent in the conversation after the call (the answer, or the
// message to a peer its reply made; earlier attempts of the turn that
// failed get the same link) — absent until that message is journaled, and
// always for an in-memory organism, whose calls (the last 256) are not
// journaled. A durable organism keeps calls in the journal's llm_calls
// table, beside the journal: `xmlpipe journal thread ID` shows each before
// the envelope it produced. A refused inject is 422
// {"error": canned text, "diagnostics": […]}; one the organism is too busy
// to take is 429 {"error":"Organism busy: listener greeter busy",
// "retry_after":2} with Retry-After: 2 (see Busy); one offered while the
// organism's storage cannot commit (a full disk) is 503 {"error":"The
// organism cannot journal messages now (disk full: …); nothing was done;
// retry later","retry_after":5} with Retry-After: 5, before anything of it
// is read; one admitted just before the first failed commit is 503
// {"error":"Message handed on but not journaled: …"}: it was not
// acknowledged, may still be handled, and will not survive a restart. A JSON body (inject, login)
// over 2 MiB is 413 {"error":"Request body too large: limit 2097152
// bytes"}; one that is not valid UTF-8, or escapes half a surrogate pair,
// is 400 {"error":"Invalid JSON: not valid UTF-8"} (never decoded into
// U+FFFD).
//
// GET /api/v1/ws is the event stream. On connect:
//
//	{"event":"connected","organism":"hello-world","agents":["system.boot",…],"threads":3}
//
// Commands:
//
//	{"cmd":"subscribe","threads":[],"agents":[],"events":[]}  → {"event":"subscribed",…}
//	{"cmd":"inject","to":"greeter","payload":{"name":"Dan"}}   → {"event":"injected","thread_id","message_id"}
//
// (empty lists match everything; inject needs operator, and its answer
// carries "notice" as REST's does; a refused inject is
// {"event":"error","error":…}, with "retry_after" when the organism was
// busy). Events:
//
//	{"event":"message","message":Message}
//	{"event":"thread_created","thread":{"id","owner","status":"active","participants","created_at"}}
//	{"event":"thread_updated","thread_id","status":"completed|error|killed|cancelled|denied|expired"}
//	{"event":"error","kind":"huh|system-error|dead-letter","thread_id","agent","error","timestamp"}
//	{"event":"agent_state","agent","state","current_thread","queue_depth","active"}
//	{"event":"delta","thread_id","agent","text","end"}
//
// An error's text is the one its /ws frame carries: canned, and a dead
// letter's reason only for an operator or admin without a profile (the
// others read "Message could not be delivered"; see the /ws protocol).
// agent_state is sent when an agent's state or current_thread changes
// (sampled every 250 ms while a stream is open). delta is an agent's
// streamed text, exactly as on /ws (thread_id is the conversation; pieces
// join while they wait; "end" marks the reply's last frame); like every
// event of the stream it reaches every subscriber whose filter matches
// (threads: the conversation or the streaming thread; agents: the agent),
// since a stream's users may read every conversation anyway. message events carry the
// message's id; thread_created, thread_updated and error events carry a
// stable "message_id" (as on /ws), and all of them are sent only once what
// they name is committed to the journal.
//
// GET /api/v1/ws/messages (viewer) is the message log stream. It sends
// nothing until the client subscribes; a new subscribe replaces the filter:
//
//	{"cmd":"subscribe","filter":{"agents":[],"threads":[],"payload_types":[]}}
//	                                    → {"event":"subscribed","filter":{…}}
//
// An empty (or missing) list matches everything; agents match the sender,
// addressee or receiving listener, threads the thread or its conversation,
// payload_types the payload root tag. From then on every message the
// organism accepts that matches is sent, in the order accepted (the
// wire package's LogMessage):
//
//	{"id":"<sha256>","thread_id":"…","conversation":"…","from":"greeter","to":"shouter","listener":"shouter",
//	 "payload_type":"GreetingResponse","payload":"<GreetingResponse>…","timestamp":"…","slot_index":0}
//
// id and payload are the REST API's message id and payload; slot_index is
// the message's index in its thread's history (the context buffer its
// handler sees: a thread's n-th delivered message is slot n), null for a
// reply leaving the organism, which enters no history. Errors:
// {"event":"error","error":"Invalid JSON"} or "Unknown command: …".
//
// A user with a security profile sees on both streams only the events of
// threads of that profile or a narrower one that name no listener outside
// it (pump.Event.Profile; profile.go): the conversations of users without
// a profile, and the traffic of listeners outside the profile, never reach
// them; a listener outside the profile stays indistinguishable from one
// that does not exist. The REST journal endpoints and /ws's listeners,
// threads and monitor answers follow the same rule (an ended thread is
// judged by the profile the journal recorded with its entries; of entries
// journaled before it recorded profiles, only the conversations the user
// began). Counts and states are scoped the same way (profile_scope.go):
// the connected frame's threads, /ws status and /api/v1/organism count
// only what the profile sees and carry "profile"; organism-wide counters
// read 0; a visible listener's state, current thread, last_error and peers
// come only from what the user may see, and its queue_depth, handled and
// last_activity (in Agent and agent_state) are absent; usage lists only
// their threads' calls. Users without a profile see everything.
//
// Journal messages (/threads/{id}/messages, /messages) carry "profile",
// the profile the journal recorded ("" for none; absent when not recorded),
// and the entries retention pruned appear in their place with
// "pruned":{"reason","at"} and an empty payload.
//
// # Governance: approvals and the emergency halt
//
//	GET  /api/v1/approvals                {"approvals":[Approval…],"next":ID}, newest first;
//	                                       ?status=pending|approved|denied|expired&thread=ID;
//	                                       a page: ?limit=N (1-500, default 100), at most 4 MiB of
//	                                       held envelopes (at least one approval); "next", present
//	                                       when more follow, is the next page's ?after=ID
//	GET  /api/v1/approvals/{id}           Approval
//	POST /api/v1/approvals/{id}           operator: {"decision":"approve"|"deny","reason":"…"} → Approval;
//	                                       404 unknown, 409 when not pending, saying how it ended:
//	                                       {"error":"Approval ID was approved already by olga (fine)"},
//	                                       {"error":"Approval ID expired (conversation killed)"};
//	                                       403 when the user approves a review approval of their own
//	                                       conversation while another user could (four eyes:
//	                                       approval_four_eyes.go)
//
// An approval of kind memory (an agent asks to remember something about
// the user of its conversation) is that user's and the admins' alone: to
// anyone else it does not exist — absent from the list, 404 to GET and
// POST, and pushed neither on /ws nor on /api/v1/ws. Every other approval
// is every user's (within their profile).
//
//	POST /api/v1/organism/halt            admin: optional {"scope":"agents"|"all"} →
//	                                       {"status":"halted","scope","cancelled","held"}
//	POST /api/v1/organism/resume          admin → {"status":"running","resumed":true|false}
//
// An Approval is {"id","kind","thread_id","thread","agent","target",
// "payload","request_reason","rules","created_at","expires_at","status",
// "decided_by","reason","decided_at"} (the wire package's ApprovalInfo):
// a call an agent's approval: list holds (kind tool), or a message a
// constitution rule sends to review (kind review), waiting for a human;
// thread_id is its conversation, payload the held envelope, agent its
// sender and target where it waits to go. Approved, the call is
// delivered and runs; denied (or not decided before the sender's
// approval_timeout), its sender gets a structured <refusal> ("denied by
// <user>: <reason>", "approval timed out") and carries on. A waiting call
// survives a restart of the organism (it waits again, under the same id);
// a killed conversation's approvals expire. While the organism is halted
// (the agents, or with "all" every listener: running handlers' contexts
// and their model requests are cancelled, queued messages wait) GET
// /api/v1/organism says "status":"halted"; resume runs what waited.
//
// Pushes: /ws clients get {"type":"approval","approval":Approval} when a
// call of one of their conversations begins waiting (admins: of every
// conversation) and {"type":"approval_decided","approval":Approval} when
// it is decided; admins also get {"type":"guardian_alert","sender",
// "count","window_seconds","rules","timestamp"} when one sender's messages
// were refused governance.alert_after times within alert_window; everyone
// gets {"type":"halted","scope","by","timestamp"} and {"type":"resumed",…}.
// A listener of the conversation refused by a rule or a human shows as
// {"type":"refusal","thread_id","from":"core","to",…,"error":summary}; an
// outside sender's refusal is its conversation's reply, payload_type
// "refusal". The event stream carries {"event":"approval"|
// "approval_decided","approval":Approval}, {"event":"guardian_alert",…}
// and {"event":"organism_halted"|"organism_resumed","scope","by"}.
//
// # Memory
//
//	GET    /api/v1/memory                 {"memories":[Memory…]}: the caller's own, newest first;
//	                                       ?q=words (any of them, best first) &limit=N (1-500);
//	                                       admin only: ?user=NAME, ?all=true (403 otherwise)
//	DELETE /api/v1/memory/{id}            the caller's own (an admin's: any) → {"deleted":Memory};
//	                                       404 for an unknown id or another user's memory
//
// A Memory is {"id","user","agent","content","tags","consent","thread_id",
// "thread","created_at"} (the wire package's MemoryInfo): what an agent
// with memory (memory: true) was allowed to remember for the user of a
// conversation. consent is the approval that let it in (under memory
// consent ask a remember call is an approval of kind memory, listed and
// decided like any other) or "policy:always". A deletion is audited.
//
// # Busy: bounded admission
//
// Every message from a client takes a unit of the organism's admission
// budget (organism.yaml max_in_flight, default 4096) until its handling
// is done. The budget is shared: a target listener may hold an eighth of
// it and one user a quarter, and a listener's backlog beyond its eighth
// (a paused or stuck listener's) does not count against the others. A
// message expected to wait at its target listener longer than
// max_queue_wait (default 30 s) before its handling starts — the messages
// ahead of it there times the listener's measured pace — is refused at
// once. A message that finds no room waits for it at most admit_wait
// (default 2 s), and only while room is expected within a quarter of a
// second, and is then refused — nothing of it is kept or journaled, so
// sending it again is safe: REST inject answers 429 with Retry-After (seconds) and
// "retry_after" in the body, /ws and the event stream an error with code
// "busy" (/ws) and "retry_after", /bus a <huh> "Organism busy; retry in N
// s". The text after "Organism busy: " says what was full: "in-flight
// budget full", "listener NAME busy" (with ": about N s of work queued"
// when time refused it) or "user's in-flight share full". No request ever
// waits longer than admit_wait for room.
//
// # Dashboard: GET /
//
// GET / is the dashboard, a page whose script and style (GET /ui/app.js,
// /ui/style.css) are embedded in the binary. They are open and hold no
// data: the page logs in with POST /auth/login and then uses the REST API,
// /ws and the /api/v1/ws event stream as that user, so the user's role
// decides what it may do (a viewer gets no send box; only admins see
// pause, resume and kill). The send box continues the open conversation
// (a /ws send with its thread_id; the conversation a send began opens) and
// its New button begins another; the open conversation shows its agents'
// text as it streams (delta events) and a table of its model calls (GET
// /api/v1/usage/calls). It reads a conversation a page at a time after
// the last seq it drew (?after=), all of it however long, and polls for
// what is new the same way. It says when the session is about to end
// (expires_in) and, once it has, returns to the login form saying so. It
// is served with a Content-Security-Policy that allows only its own
// origin (connect-src 'self': its own ws:/wss: too, no other host).
//
// # Metrics: GET /metrics
//
// With Options.Metrics set, GET /metrics answers the organism's Prometheus
// metrics (text exposition format; see package observe for the families)
// to a request whose bearer token is Options.ScrapeToken (organism.yaml
// observability.metrics.scrape_token), else only to an admin session: 401
// {"error":"Missing Authorization"} or {"error":"Invalid token"}, 403
// {"error":"Forbidden"} for a viewer or operator. Without Options.Metrics
// it is 404.
//
// # Frames and flow control
//
// A frame over Options.MaxFrameBytes (1 MiB by default) closes any socket
// with 1009 "Message too big: limit N bytes"; a text frame that is not
// valid UTF-8 with 1007 "Invalid UTF-8 in text frame" (RFC 6455 §8.1).
//
// Every socket has a bounded send queue (Options.SendQueue frames); the
// organism never waits for a client: a client that falls that far behind is
// closed with 1013 "Client too slow". The frames waiting in a queue when its
// writer wakes go out together, in one TLS write. Sockets are pinged every
// PingInterval and closed after PongWait of silence. Shutdown closes every
// socket with 1001 "Server shutting down" and waits for the server's
// goroutines.
package bus
