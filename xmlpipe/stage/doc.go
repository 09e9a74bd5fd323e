// Package stage is the engine every message passes through before a handler
// sees it, and the XML toolbox the pump, the OOB channel and the tools share.
// Handler authors do not need it: they write against package xmlpipe.
//
// The stages of one message (Ingress.Read): size cap, strict parse with a
// repair path (LexFix, libxml2 recover), exclusive C14N, envelope validation,
// payload extraction and thread assignment (IsThreadID, NewThreadID); then,
// per listener, payload validation and decode (Inbound.Decode). Every
// failure is a *failure.Failure (package xmlpipe/failure) naming the stage,
// the sentinel error and the diagnostics, and its sender is told only the
// canned text.
//
// The pump builds the envelopes it injects with AppendEnvelope (and
// AppendEnvelopeInReplyTo for an answer to a correlated message), splits raw
// handler or LLM output into payloads with SplitRaw, and answers failures
// with the core payloads (Core, NewHuh, RoutingError, NewRefusal). The
// toolbox: Canonicalize and CanonicalizeChild (exclusive C14N), CompileSchema,
// EvalXPath, SplitSignature (enveloped signatures), TextField and
// NewTextPayload (a payload from a line of text).
//
// Every parse refuses a DOCTYPE and never touches the network; libxml2 runs
// through the cgo layer in xmlpipe/internal/lx.
package stage
