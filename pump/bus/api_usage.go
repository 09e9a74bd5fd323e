package bus

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// maxCallsLimit bounds ?limit of GET /api/v1/usage/calls.
const maxCallsLimit = 1000

// callsBody is the answer of GET /api/v1/usage/calls.
type callsBody struct {
	Calls []wire.Call `json:"calls"`
}

// apiUsageCalls is GET /api/v1/usage/calls?thread=ID&limit=N (viewer): the
// newest LLM calls of the conversation or thread (every call without
// thread), oldest first.
func (s *Server) apiUsageCalls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	thread := strings.TrimSpace(q.Get("thread"))
	if thread != "" && !stage.IsThreadID(thread) {
		writeError(w, http.StatusBadRequest, "Invalid thread: want a lower-case UUID")
		return
	}
	limit := organism.DefaultCallLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCallsLimit {
			writeError(w, http.StatusBadRequest, "Invalid limit: want 1 to "+strconv.Itoa(maxCallsLimit))
			return
		}
		limit = n
	}
	calls, err := s.opts.Organism.Calls(thread, limit)
	if err != nil {
		s.log.Error("read calls", "error", err)
		writeError(w, http.StatusInternalServerError, "Internal error")
		return
	}
	calls = s.callsFor(sessionOf(r.Context()), calls)
	out := callsBody{Calls: make([]wire.Call, 0, len(calls))}
	for _, c := range calls {
		out.Calls = append(out.Calls, wireCall(c))
	}
	writeJSON(w, http.StatusOK, out)
}

// wireCall is the API's form of a call.
func wireCall(c organism.Call) wire.Call {
	return wire.Call{ID: c.ID, Time: stamp(c.Time), Conversation: c.Conversation, Thread: c.Thread, Agent: c.Agent,
		Backend: c.Backend, Model: c.Model, Attempt: c.Attempt, PromptTokens: c.PromptTokens,
		CompletionTokens: c.CompletionTokens, UsageEstimated: c.UsageEstimated, WaitMS: ms(c.Wait), FirstTokenMS: ms(c.FirstToken), DurationMS: ms(c.Duration),
		Streamed: c.Streamed, FinishReason: c.FinishReason, Outcome: c.Outcome(), ToolCalls: c.ToolCalls, Error: c.Error,
		EnvelopeSeq: c.EnvelopeSeq}
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// usage answers the /ws usage request: the console backend's token usage
// and the organism's newest calls.
func (w *wsSocket) usage(reply wire.Head) {
	out := wire.Usage{Head: reply, Agents: []wire.TokenUsage{}, Backends: []wire.TokenUsage{}, Calls: []wire.Call{}}
	if ur, ok := w.s.opts.Console.(organism.UsageReporter); ok {
		u, llm, err := ur.Usage(w.c.ctx)
		if err != nil {
			w.internal(reply, err)
			return
		}
		out.LLM = llm
		if w.c.sess.Profile != "" {
			// The totals are the organism's: not shown to a user with a
			// profile, who sees the calls of their profile's threads only.
			u.Agents, u.Backends = nil, nil
		}
		for _, t := range u.Agents {
			out.Agents = append(out.Agents, wire.TokenUsage{Name: t.Name, PromptTokens: t.PromptTokens,
				CompletionTokens: t.CompletionTokens, Requests: t.Requests})
		}
		for _, t := range u.Backends {
			out.Backends = append(out.Backends, wire.TokenUsage{Name: t.Name, PromptTokens: t.PromptTokens,
				CompletionTokens: t.CompletionTokens, Requests: t.Requests})
		}
	}
	if out.LLM {
		calls, err := w.s.opts.Organism.Calls("", organism.UsageCalls)
		if err != nil {
			w.internal(reply, err)
			return
		}
		for _, c := range w.s.callsFor(w.c.sess, calls) {
			out.Calls = append(out.Calls, wireCall(c))
		}
	}
	w.c.send(out)
}
