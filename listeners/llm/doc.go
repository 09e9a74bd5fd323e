// Package llm makes agents think: a Router that spreads chat requests over the
// configured LLM backends (openai, xai, anthropic, ollama) with retries,
// per-backend token buckets and concurrency limits, and the agent loop — a
// listener that sends the constitution, the agent's prompt, its peers' usage
// instructions and the thread's history to the model and hands the reply to
// the pump as Raw XML.
//
// Providers speak their wire protocols with net/http and encoding/json: each
// needs one endpoint, and the Router owns retries, timeouts and Retry-After for
// all of them alike.
package llm
