// Package llm makes agents think: a Router that spreads chat requests over the
// configured LLM backends (openai, xai, anthropic, ollama, and any
// OpenAI-compatible server through base_url) with retries, per-backend token
// buckets and concurrency limits, and the agent loop — a listener that
// translates mechanically between the model's native tool calls and the
// organism's envelopes (seed 000 §11.4).
//
// # The agent loop
//
// An Agent offers the model every peer as a function (toolbox.go): the name
// mapped to ^[a-zA-Z0-9_-]{1,64}$ reversibly (weather.forecast →
// weather_forecast, collisions settled by a hash of the name), the
// listener's description, and gen.JSONSchema of the peer's payload as the
// parameters — the derivation the MCP bridge uses. A call becomes a message
// to that peer, its arguments written as the payload by codec.AppendJSON
// and the call's id as the message's correlation ref
// (xmlpipe.SendResponse.Ref); the calls of one reply are sent together
// (xmlpipe.SendAll) and run concurrently. The answer — or the <huh> or
// SystemError about the message, in words — comes back bound to its call
// (xmlpipe.Metadata.InReplyTo) and is kept in the thread's history; once
// every call has its result the model is asked again. Calls that cannot be
// made are answered at once with the reason. The reply's text is the
// answer to the caller, never parsed for XML. LocalTool is the hook for
// functions the loop answers itself (memory, loop control).
//
// Everything the loop knows lives in the thread's history (the context
// buffer, durable in a durable organism), so a restart in the middle of a
// tool call carries on. The history sent is fitted to the model's context
// window (oldest first, with a note); MaxIterations counts the model calls
// of a turn; the progress guard compares text and tool calls. XMLTools is
// the mode for models without function calling; Agent.Response asks for
// structured output.
//
// # The provider layer
//
// One Request shape serves every provider; each speaks its own wire form:
//
//   - Tools offered: Request.Tools (name, description, JSON Schema
//     parameters), constrained by Request.ToolChoice (auto, none, required or
//     one named tool) and Request.ParallelToolCalls.
//   - Tool calls the model made: Reply.ToolCalls (id, name, arguments as the
//     model wrote them), several when it calls in parallel, with
//     Reply.FinishReason FinishToolCalls. A call whose arguments are not a
//     JSON object carries ToolCall.Err (wrapping ErrBadArguments): answer it
//     with a Tool message saying so, and the model corrects itself. Calls
//     without provider ids (ollama) get stable minted ones.
//   - The conversation goes on with Reply.Message() (the Assistant message
//     with the calls) followed by one Message{Role: Tool, ToolCallID: id,
//     ToolName: name, Content: result, IsError: failed} per call; Anthropic
//     gets consecutive results as tool_result blocks of one user message
//     (is_error set on a failure; openai/xai and ollama, which have no such
//     flag, get a failed result's text beginning "Error: "), ollama binds
//     them by tool_name. Anthropic gets no empty turn and one turn per run
//     of same-role messages, as its Messages API requires. Request.Validate (run by Router.Chat)
//     refuses conversations no provider would take: a call left unanswered,
//     a result for no call, bad tool names (^[a-zA-Z0-9_-]{1,64}$).
//   - Structured output: Request.Output (a JSON Schema) makes Reply.Content
//     the JSON answer — openai/xai response_format json_schema, ollama
//     format, anthropic a forced tool whose input is the answer. The JSON is
//     checked by nobody here: validate it against the schema.
//   - Streaming: Request.OnDelta receives each Delta as it arrives — a Text
//     piece, a ToolCall piece (a call's id and name, then pieces of its
//     arguments, assembled by index across chunks even when calls
//     interleave) or Restart when a failed attempt's pieces are void because
//     the Router tries again. The Reply still holds the whole answer.
//
// Finish reasons are normalised (stop, tool_calls, length, content_filter,
// refusal, other); Reply.StopReason keeps the provider's word.
//
// # Errors
//
// A failed Router.Chat returns a *CallError that names the model and the
// backend once ("model "gpt-4o" on backend openai: HTTP 429 (rate limited):
// …"); errors.Is finds the cause: ErrRateLimited, ErrQuota (a 429 for an
// account out of credit: not retried on that backend), ErrServer, ErrAuth,
// ErrRequest (a *StatusError carrying the provider's own message and
// retry-after-ms or Retry-After), ErrMalformed (a *ReplyError: a 2xx reply that is not the
// protocol — an HTML page from a proxy, a stream cut short — quoted by
// status, content type and its first bytes), context errors, and
// ErrAllFailed when the retries ran out. Providers and backends never name
// themselves in their errors; the CallError does.
//
// # Usage per call
//
// Every attempt of a Router.Chat — each HTTP call to a backend, completed or
// failed — yields a CallRecord (backend, model, agent, thread, attempt,
// tokens, wait, time to first token, duration, finish reason, number of tool
// calls, error) for the observer set with RouterConfig.OnCall or
// Router.SetOnCall. The Router also keeps sums per agent, per thread and per
// backend (AgentUsage, ThreadUsage, Usage) for the token budgets.
//
// Providers speak their wire protocols with net/http and encoding/json: each
// needs one endpoint, and the Router owns retries, timeouts and Retry-After
// for all of them alike.
package llm
