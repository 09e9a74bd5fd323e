// Package aeiou implements AEIOU v3 loop control (shared/seeds/002): an
// agent decides whether its loop continues, is done or aborts only through
// a host-minted, signed control token, which it must write as the last line
// of its answer; the host verifies the token against the current turn and
// applies the decision.
//
// It holds every piece of the specification: canonical JSON (JCS, RFC 8785,
// integers only: jcs.go), the token wire form and claims (token.go), keys
// and the key ring with rotation grace (keys.go), the minter with its
// fallback signer (mint.go) and its native-tool face (tool.go), the verifier
// (verify.go), the per-session replay cache (replay.go), the per-turn
// decision with its lints (decide.go), the progress guard (progress.go), the
// §10 decision record and counters (observe.go), the envelope (envelope.go)
// and the AI-facing rules (rules.go). It imports only the standard library.
//
// # How an agent loop uses it
//
// Once per process:
//
//	host, err := aeiou.New(aeiou.Options{Observer: counters, Logger: log})
//
// New generates two Ed25519 keys (primary and fallback) unless Options.Keys
// brings loaded ones (NewKeys, NewEd25519Signer, NewHMACSigner for HS256).
// Keys need not outlive the process: a token verifies only inside the turn
// it was minted for. Minter.Rotate switches the primary key; the old one
// keeps verifying for MaxTTL + RotationBuffer (§11.5).
//
// Per conversation (the session: its id is the thread id) keep a Session:
//
//	s, err := host.Session(threadID)
//
// Per agent turn (one message handled, however many model calls and tool
// rounds it takes):
//
//  1. t, err := s.Begin() — the next turn index and a fresh 128-bit nonce.
//  2. Offer the native tool ToolName with ToolDescription and
//     ToolParameters, and put Rules in the system prompt. When the model
//     calls the tool, return s.Magic(arguments).Token as the tool result;
//     an ErrBadRequest or ErrTokenTooLarge error's text goes back to the
//     model instead, so it can fix its call. ErrMagicInternal (both signers
//     failed) halts the loop with ERR_MAGIC_TOOL_INTERNAL; the host never
//     writes a token into the answer itself.
//  3. When the model answers, d := s.Decide(ctx, answer, scratch) — scratch
//     is private text of the turn (e.g. tool results), used only for the
//     progress digest. Only the answer is scanned for tokens.
//  4. Apply d.Outcome as below; the next turn starts with Begin again.
//
// # Outcomes
//
//   - OutcomeContinue: keep StripTokens(answer) as the turn's output and run
//     another turn.
//   - OutcomeDone: StripTokens(answer) is the final answer.
//   - OutcomeAbort: stop; report the abort (with the answer) to the caller.
//   - OutcomeMissing, HALT(ERR_TOKEN_MISSING) (§8): no valid token. The
//     recommended mapping is to stop the loop and deliver the answer as final,
//     as for done, but logged and counted as a halt — never to continue on a
//     missing token. A strict loop may treat it as an abort; a tolerant one
//     may ask the model once more for a token (a new turn) before halting.
//   - OutcomeNoProgress, HALT(ERR_NO_PROGRESS) (§9): the same digest N turns
//     in a row while the model asked to continue: stop, as for abort.
//
// Decide logs the §10 record (Decision.Record) at info (warn for halts and
// rejected candidates) and reports events to the Observer: Counters counts
// decisions, ignored candidates by Reason, lints and mints; wrap it for
// Prometheus.
//
// # What counts as a token
//
// Only a line of the answer that is exactly a token (§6.2; a trailing "\r" is
// ignored) is a candidate. Token-like text that is quoted, in backticks, in
// a code fence, embedded in a line or split across lines is ignored and
// counted with its Reason, as is a token that does not verify (forged,
// altered, for another session, turn or nonce, expired, replayed, of an
// unknown kind, oversized). At most MaxCandidates bare lines are verified
// per turn. Among the valid tokens abort > done > continue, and the last wins
// among equals.
//
// # Envelope
//
// The envelope (§3) is the specification's prompt form for hosts running an
// NS interpreter; BuildEnvelope and ParseEnvelope implement it and its
// conformance goldens (testdata/envelopes), though the native-tool agent
// loop needs only tokens and decisions.
package aeiou
