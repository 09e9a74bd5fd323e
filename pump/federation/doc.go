// Package federation links organisms: each gateways[] entry of organism.yaml
// is a WSS link to a peer organism, mutually authenticated by the two
// organisms' Ed25519 identities, over which calls to the peer's exported
// root tags travel and their answers come back.
//
// # The link
//
// The dialing side (a gateway with remote_url) opens wss://host:port/federation
// on the peer's bus. Both sides then prove their identity (handshake.go): each
// signs a transcript of both public keys, both nonces and the TLS exporter
// value of the connection, so a proof is bound to this TLS session and cannot
// be relayed. The peer's key must equal its gateway's trusted_identity,
// and its hello (or challenge) must name its organism: every envelope's
// <from> is checked against that name, so a handshake naming none is
// refused (ErrNameless). The hello and the challenge also carry the
// sender's clock (unsigned, advisory): each side warns when the two clocks
// are more than clockWarn apart, and a stale refusal of a peer whose clock
// lags says so (clock.go). A handshake frame is capped at
// handshakeFrameMax.
// Until the dialer's proof verifies the link is unauthenticated, so the
// acceptor bounds handshakes (admission.go): handshakeTimeout (5 s) for the
// whole of one, at most MaxHandshakesPerSource at once from one address (an
// IPv6 /64) and MaxHandshakes in all; over a bound the oldest handshake
// that has not said hello is cut off for the newcomer, which is refused
// (503) only when none is idle.
//
// After the handshake every binary frame is one envelope, signed by its
// sender as an XML-DSig <Signature> in <meta> (package envsig) and verified
// against the peer's key; text frames carry acknowledgements (JSON). Each
// envelope's <meta> has a <link> element (namespace NS) naming the message
// id, its kind (call, reply, huh, end, cancel, meta, meta-answer,
// exports-changed), the call it
// answers and when it was sent:
//
//	<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>a</from><to>greeter</to>
//	<thread>{link thread}</thread><link xmlns="https://xml-pipeline.org/ns/federation/v1" id="…" kind="call" sent="…"/>
//	<Signature xmlns="http://www.w3.org/2000/09/xmldsig#">…</Signature></meta><Greeting><Name>Dan</Name></Greeting></message>
//
// A call made while the caller's organism traces carries the W3C trace
// context of the span that made it as the <link>'s traceparent attribute
// (signed with the rest of <meta>); the callee's tracer (Options.Traces)
// starts the conversation the call begins as a child of that span.
// Options.Observer counts what each gateway carries and refuses.
//
// # Calls and threads
//
// An imported root tag is a local listener (named like the peer's
// capability, validating against the schema the peer gives it) whose
// handler sends a call and waits for its answer. The imports are asked of
// the peer again on every link up, and when the peer says its exports
// changed (ExportsChanged, after its reload) (refreshImports): a listener whose
// schema or description changed is replaced (running conversations keep
// the old one), one whose tag the peer no longer exports is removed (a new
// call to it fails at once, as to any unknown listener), and the list is
// remembered for the next start. A reload changes the gateways
// themselves (PlanGateways, GatewayChange.Apply): added ones link, removed
// ones stop, a changed peer address or key relinks in place. The answer is returned to the caller
// with Respond, so the caller's thread is pruned as for a local call. The call travels on a link thread of its own,
// named by the message being handled: derived (HMAC under the organism's
// secret) from that message's journal seq (pump.MessageSeq), so a message
// re-delivered after a crash makes its call again under the same name,
// while two messages — even with the same payload on the same thread —
// make two calls (callid.go). Where the message has no journal seq (no
// store) the link thread is random. The receiving side begins a fresh
// conversation whose id it derives from the link thread with its own key
// (so the peer can neither pick nor learn it), injected from the gateway's
// name with the gateway as the authenticated principal. What that
// conversation answers its root sender (the gateway) is sent back as a
// reply; a <huh> as a huh; a conversation that completes without an answer
// as end. A caller's thread that ends while its call is open sends end the
// other way, and the peer kills the mapped conversation.
//
// A call carries the hops its caller's chain has made (pump.ChainHops) as
// the <link>'s hops attribute (signed with the rest of <meta>; absent for
// 0), and the conversation it begins counts on from them
// (pump.Principal.Hops), so max_chain_depth bounds a chain across
// organisms and a cycle through gateways stops (hops.go). A call that has
// made the callee's max_chain_depth hops already is refused with a nack
// of reason ReasonTooDeep; the caller's call fails with a
// pump.TooDeepError, and a conversation stopped for it answers its caller
// a huh of that reason, so every conversation of the cycle stops, each
// client told the same text. A hop count that is not one is refused.
//
// # Faults
//
// Outgoing envelopes wait in an outbox (a table of the organism's store;
// calls bounded by queue_limit, answers to the peer's calls not) until the
// peer acknowledges them: a call is
// acknowledged once the peer journaled it durably. After a reconnect the
// unacknowledged ones are sent again, byte for byte; the receiver refuses a
// second copy (by envelope hash, and for calls by the derived conversation
// id, which its received table records before the injection and marks done
// once the journal holds the call; the journal decides for one not done), so
// each message arrives exactly once. Links reconnect with exponential
// backoff and jitter. An idle link is pinged every pingEvery and given up
// after silenceLimit; one a call waits on is probed (probe.go): silent for
// probeSilence, it is pinged, and closed when nothing comes back within
// probeTimeout, so a frozen peer is told to the caller in seconds. The
// peer's calls that a new link holds until this side asked for its imports
// are handled in the order they came, with the cancels behind them
// (ready.go).
//
// An answer's outbox entry is queued once the pump's event says what it
// answers is durable, so it commits after that: after the reply's journal
// record, or after the delivery mark of the message whose handler failed
// (huh) or ended the conversation (end). The pump's recovery does not run
// such a handler again nor re-deliver a reply to an outside party, so the
// entry deletes the conversation's served row in its own transaction, and
// at the next start a served row left without an answer is answered from
// the journal (served.go): its reply, else — when its call is journaled
// and nothing of the conversation is left to re-deliver — its huh or end.
//
// On the caller's side an answer handed to the waiting handler is
// acknowledged only once the pump journaled the handler's output that
// carries it (pump.AfterJournal): its seen hash, whose commit sends the
// acknowledgement, and the deletion of its call's record are queued after
// that output, so they commit with it or later. The peer deletes the
// answer only then; a crash before leaves it to send again, to the
// re-delivered message's call. An answer nobody waits for is acknowledged
// once it is kept (or dropped), and one kept for a call is durable before
// its hash. A copy of an envelope whose acknowledgement is still to come
// (an answer's, deferred so or waiting for its hash to commit; a call's,
// while it is being injected) — the peer sends its outbox again after a
// reconnect, and deletes the envelope on the first acknowledgement — is
// acknowledged only with the original, on the link the copy came on
// (unsettled.go); if the original's never comes (a shutdown dropped its
// handling, a call was refused), neither does the copy's, and the peer
// sends it again.
//
// A call is recorded (federation_calls) so that the message that made it,
// handled again after the caller's restart, adopts it rather than calling
// twice, and takes the answer that came meanwhile. A call named by its
// message leaves as soon as that message is durable (a crash must not lose
// the message and run the handler that sent it again, which would be a
// second call); its record and outbox entry are queued only once it has
// been open for a second (deferred.go: one answered and acknowledged by
// then writes neither; a stop queues those still deferred) and ride the
// next group commit. A crash before that commit loses them, not the
// call: the re-delivered
// message sends it again under the same id, the peer refuses the copy and
// answers under that id, and an answer that comes before the re-delivery
// (soon after a start, to a call with no record) is kept for it. Such a
// re-sent call carries the time its message was journaled, so the peer
// refuses it as stale once it may have forgotten the first copy. A
// handling that a halt stopped keeps its call for the handling after
// Unhalt, which computes the same id and never calls the peer a second
// time: once the answer came — the pump drops what the handler returns, or
// the answer was handed over as the halt cancelled the wait — the answer is
// parked in memory, unacknowledged, with its call still claimed and
// recorded, and that handling takes it and acknowledges it once its own
// output is journaled; before the answer came, the call is held open (the
// peer goes on with it), its answer parked when it comes, and that
// handling waits on it. A parked answer whose caller's thread ends (a
// kill) is acknowledged and its call forgotten, a held call cancelled; at
// a shutdown both stay unacknowledged and recorded, and the peer's resend
// answers the call adopted after the restart. A handling interrupted
// otherwise before its answer (past 1,024 kept calls) cancels its call,
// and the next handling calls anew under another id. A call with a random
// link thread (an organism without a journal) is adopted by its caller's
// thread and payload digest instead, by which the handling after Unhalt
// also finds the call a halt held, and leaves only once it and its record
// are durable.
//
// # Cost
//
// A link's envelopes are verified and parsed on up to GOMAXPROCS workers
// and delivered in the order they came (inbound.go); the workers, and the
// handlers that inject calls, live as long as the link. A link's frames
// leave through one writer goroutine (linkwrite.go): the acknowledgements
// due, a sender's batch of outbox entries, pings and pongs queued while it
// writes are encoded together and written with one Write, one TLS record
// (up to 16 KiB) and one system call per batch instead of one per frame
// (`xmlpipe bench --federation` under strace -c: 2.9 → 1.0 write calls per
// envelope; BenchmarkLinkFrames, three interleaved pairs at load 21:
// 1.7-2.0 → 0.58-0.65 writes and 15.9-17.3 → 14.2-16.5 µs of CPU per
// envelope and acknowledgement, reader included). Whether an
// envelope sent within the last minute was received before (its hash, or
// its call's conversation) is answered from memory, exactly: an envelope
// is never received before its sent time minus the future skew, and the
// rows written since the start minus that skew are loaded at the start
// (recent.go); older envelopes are looked up in the tables. The federation state
// (schema.go) lives in the organism's store (xmlpipe.db) and every write
// to it goes through the store's writer (state.go), in the journal's group
// commits: no database, commit, fsync or checkpoint of its own. An
// acknowledgement leaves once the write it waits for is durable (its
// writer yields first to what that commit woke before it, such as the
// pump's event a caller waits on); writes
// only an acknowledgement waits for (a seen hash, a received call's done
// mark) ride with the next commit instead of forcing one. A received
// call's received and served rows are queued before the call is injected,
// so in an organism (whose pump journals into the same store) they commit
// with its journal record, or before it, and the call's acknowledgement
// waits for no commit but that one (without a journal to decide, it waits
// for the done mark too). That commit is not forced for the call
// (store.WaitCommitted): it is the one the pump forces for the
// conversation's answer, so a call and its answer cost the callee one
// commit; the manager takes only the pump's events it acts on
// (Pump.SubscribeKinds), so no other event forces it earlier. Nothing
// waits for an outbox entry to commit before the envelope leaves
// (gateway.sendEarly), and no entry forces a commit: a call named by its
// message waits for that message's commit only (asked for before the call
// is signed, so that the signature is made while it runs), and an answer,
// an end or a cancel leaves at once — answers go out from the pump's event
// gate, whose one goroutine would otherwise wait a commit per answer; a
// reply is signed as soon as the pump has it (Pump.Watch), while its
// commit runs. Every write queued after an entry commits with it or later,
// so none is durable without it; an entry acknowledged before its insert
// ran is never written (rowClaim). The rows written one or two per
// envelope (outbox entries and their deletions, seen hashes, received and
// served rows and done marks, call records and their deletions) are
// gathered by their writes and written at the end of the group commit's
// run, in one multi-row statement per kind (rowbatch.go, store.Tx.AtEnd),
// not a statement each; any statement a write of the state runs itself
// comes after the rows gathered before it.
//
// Where the WAL pages of a busy link go (both stores' WAL read in the
// middle of `xmlpipe bench --federation --duration 12s` at load ~15, 422
// calls/s, each frame's page mapped to its table with dbstat): a commit of
// the callee writes 13.3 pages, 5.9 of them federation_received's — keyed
// by the conversation id, which is random, so a commit's calls land on as
// many pages once the table outgrows them, and at the retention (an hour
// of calls) that is a 16 KiB frame per call — then journal_rows 2.5,
// federation_received_at 1.0, federation_served 1.0, journal_state 0.9,
// the outbox 0.8 and page 1 0.6 (the freelist its envelopes churn); one of
// the caller wrote 8.6: journal_rows 2.3, journal_state 0.9, the pump's
// threads and slots 0.9 each, federation_calls 0.8, federation_seen and
// its at index 0.6 each, the outbox 0.5 and page 1 0.5. Without that
// index (schema.go) the caller's commits write 7.8 pages, and both stores
// 1.92-1.98 WAL frames per envelope instead of 2.05-2.13 (three
// interleaved pairs at load 17-18). Writing a call's record and outbox
// entry only once it has been open for a second (deferred.go) takes
// federation_calls and the outbox's pages out of the caller's commits
// (5.7 pages each, journal_rows 1.2, journal_state 1.0, threads and slots
// 1.0 each, federation_seen 0.8): 1.38-1.59 WAL frames and 1.59-1.81 statements per envelope
// against 2.03-2.16 and 2.30-2.46 before both changes, 278-293 µs of
// CPU per envelope against 306-335 (three interleaved pairs at load 11). A copy of a call is looked up by its
// conversation alone (a re-sent call carries another sent time), so
// received rows cannot simply be keyed by time as the seen hashes are. The
// federation.db of earlier versions is moved into the store at the first
// start (migrate.go). An organism without a data directory keeps the state
// in memory.
//
// Privileged and system roots never cross: they are refused at both ends.
package federation
