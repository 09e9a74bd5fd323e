package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/codec"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// sourceAPI is the source part of the <from> of REST and stream injects
// ("api:<user>", as the reference's inject_raw builds it).
const sourceAPI = "api"

// injectRequest is the body of POST /api/v1/inject (and the stream's inject
// command): Payload is a JSON object mapped onto the listener's payload
// fields, or a string holding the payload element's XML.
type injectRequest struct {
	To       string          `json:"to"`
	Payload  json.RawMessage `json:"payload"`
	ThreadID string          `json:"thread_id"`
}

// injectResult is the answer: the thread the message travels on and its id
// (the SHA-256 of its canonical envelope, the journal's id for it). Notice,
// when set, tells the client that the message continues a conversation
// with an agent whose earlier history is gone (expired, or dropped to keep
// at most max_threads histories) and that the agent does not remember it:
// said once, to the inject that begins the history again, so that a
// client that only injects and polls learns it as the console and /ws do.
type injectResult struct {
	ThreadID  string `json:"thread_id"`
	MessageID string `json:"message_id"`
	Notice    string `json:"notice,omitempty"`
}

// apiError is a failed API call: the status, the JSON body and, for a busy
// refusal, the Retry-After seconds.
type apiError struct {
	status     int
	body       errorBody
	retryAfter int
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, body: errorBody{Error: fmt.Sprintf(format, args...)}}
}

// internalAPIError is a failure the client cannot fix (logged by the caller).
func internalAPIError() *apiError {
	return &apiError{status: http.StatusInternalServerError, body: errorBody{Error: "Internal error"}}
}

// apiInject is POST /api/v1/inject (operator).
func (s *Server) apiInject(w http.ResponseWriter, r *http.Request) {
	var req injectRequest
	if err := readJSON(r, &req); err != nil {
		writeReadError(w, err)
		return
	}
	res, apiErr := s.inject(r.Context(), sessionOf(r.Context()), req)
	if apiErr != nil {
		writeAPIError(w, apiErr)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// inject builds the envelope of req from "api:<user>" and runs it through
// the pump, waiting for the ingress stages.
func (s *Server) inject(ctx context.Context, sess auth.Session, req injectRequest) (injectResult, *apiError) {
	if req.To == "" {
		return injectResult{}, badRequest("Missing to")
	}
	if len(req.Payload) == 0 || string(req.Payload) == "null" {
		return injectResult{}, badRequest("Missing payload")
	}
	l, ok := s.pump.Lookup(req.To)
	if !ok || !s.visible(sess, req.To) {
		return injectResult{}, badRequest("Unknown target: %s", req.To)
	}
	thread := req.ThreadID
	if thread == "" {
		thread = stage.NewThreadID()
	} else if !stage.IsThreadID(thread) {
		return injectResult{}, badRequest("Invalid thread_id: want a lower-case UUID")
	}
	who := pump.Principal{From: sourceAPI + ":" + sess.Username, User: sess.Username, FreshThread: req.ThreadID == "",
		Profile: sess.Profile}
	if err := s.refusingEarly(who, l.Name, req.ThreadID); err != nil {
		// Refused before the payload is encoded or parsed (refusingEarly):
		// busy, or the storage cannot commit. Not logged one by one: under
		// overload there are many, and the store logs its failure once.
		return injectResult{}, refusalAPIError(err)
	}
	body, apiErr := s.payloadBytes(l, req.Payload)
	if apiErr != nil {
		return injectResult{}, apiErr
	}
	from := who.From

	var notice string
	if req.ThreadID != "" {
		// Two injects from one user onto one existing thread would be
		// indistinguishable to the id capture below.
		s.injectMu.Lock()
		defer s.injectMu.Unlock()
		notice = s.historyGone(l, thread)
	}
	var (
		mu sync.Mutex
		id string
	)
	stop := s.pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind != pump.EventMessage || e.From != from || (e.Thread != thread && e.Conversation != thread) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id == "" {
			id = messageID(e.Envelope)
		}
	}))
	got, env, err := s.pump.SendEnvelopeAccepted(ctx, pump.Envelope{From: from, To: l.Name, Thread: thread, Payload: body, As: &who}, nil)
	if err == nil {
		// Events pass the durability gate in order: once a callback queued
		// now has run, the message's own event has been delivered.
		seen := make(chan struct{})
		s.pump.AfterDurable(func() { close(seen) })
		select {
		case <-seen:
		case <-ctx.Done():
		}
	}
	stop()
	if err != nil {
		return injectResult{}, s.injectError(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if id == "" && env != nil {
		// Accepted, journaled, and held for a human or refused by the
		// delivery gate (governance): no message event carries it (yet);
		// the refusal or the answer after the approval is the
		// conversation's reply.
		id = messageID(env)
	}
	if id == "" {
		s.log.Error("injected message accepted without a message event", "thread", got)
		return injectResult{}, internalAPIError()
	}
	s.log.Info("injected", "user", sess.Username, "to", l.Name, "thread", got)
	return injectResult{ThreadID: got, MessageID: id, Notice: notice}, nil
}

// historyGone is what a message to listener l on thread is to tell its
// sender when it begins again the history of an agent's conversation that
// was removed (registry.Expiry.UserNote; the agent's model is told too):
// "" for any other message.
func (s *Server) historyGone(l pump.Listener, thread string) string {
	cb := s.pump.Context()
	if !l.Agent || cb == nil {
		return ""
	}
	if x, ok := cb.PendingExpiry(thread); ok {
		return x.UserNote(l.Name)
	}
	return ""
}

// payloadBytes encodes the request's payload for listener l: a JSON object
// through l's payload type (codec.AppendJSON: presence decides what is
// written, values are not coerced, array and object fields are native
// JSON), or XML text as given (validated by the pump).
func (s *Server) payloadBytes(l pump.Listener, raw json.RawMessage) ([]byte, *apiError) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		b, err := withEmptyNamespace(text)
		if err != nil {
			return nil, badRequest("Invalid payload: %v", err)
		}
		return b, nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, badRequest("Invalid payload: want an object of fields or an XML string")
	}
	b, err := codec.AppendJSON(nil, l.Payload.Model(), raw, codec.JSONOptions{FoldNames: true, EmptyNS: true})
	if err != nil {
		return nil, badRequest("Invalid payload for %s: %v", l.Name, err)
	}
	return b, nil
}

// notJournaledText answers an inject whose message the pump took but the
// journal could not record (pump.ErrNotDurable: it was admitted just
// before a full disk or a data directory gone read-only made commits fail;
// the next ones are refused up front): it was handed on and may still be
// answered, but nothing was acknowledged and a restart will not deliver
// it again, so the client learns both before it sends it again.
const notJournaledText = "Message handed on but not journaled: the organism could not record it (see its log: is its data directory's disk full?); " +
	"it may still be handled and answered, but it will not survive a restart: look at the thread before sending it again"

// injectError maps an inject failure to its response: a message
// continuing a killed conversation is 409 "Conversation was killed; start
// a new one" (a kill is final); another refused message is
// 422 with the canned text and the diagnostics; one the organism was too
// busy to take (pump.ErrBusy) 429 with Retry-After; one refused while its
// storage cannot commit (pump.ErrCannotJournal) 503 with Retry-After; one
// the journal could not record (pump.ErrNotDurable) 503 saying so.
func (s *Server) injectError(err error) *apiError {
	if e := refusalAPIError(err); e != nil {
		// The pump logs busy refusals per listener, rate-limited; the
		// store logs its failure once.
		s.log.Debug("inject refused", "error", err)
		return e
	}
	if errors.Is(err, pump.ErrContinueKilled) {
		return &apiError{status: http.StatusConflict, body: errorBody{Error: failure.HuhKilled}}
	}
	if f, ok := errors.AsType[*failure.Failure](err); ok {
		return &apiError{status: http.StatusUnprocessableEntity,
			body: errorBody{Error: f.Canned(), Diagnostics: diagnosticsOf(f)}}
	}
	if errors.Is(err, pump.ErrClosed) || errors.Is(err, pump.ErrNotStarted) || errors.Is(err, context.Canceled) {
		return &apiError{status: http.StatusServiceUnavailable, body: errorBody{Error: "Pipeline not available"}}
	}
	if errors.Is(err, pump.ErrNotDurable) {
		s.log.Error("inject failed: the journal could not record the message", "error", err)
		return &apiError{status: http.StatusServiceUnavailable, body: errorBody{Error: notJournaledText}}
	}
	s.log.Error("inject failed", "error", err)
	return internalAPIError()
}

// diagnosticsOf lists a refused message's diagnostics as text (nil when
// there are none).
func diagnosticsOf(f *failure.Failure) []string {
	var out []string
	for _, d := range f.Diagnostics {
		out = append(out, d.String())
	}
	return out
}
