// Package observe lets an operator see the organism: Prometheus metrics
// (Metrics, served at /metrics on the main bus), OpenTelemetry traces
// (Tracer) and the observability: section's wiring.
//
// Metrics reads most numbers at scrape time from counters the organism
// keeps anyway — the pump's listeners and stats, the store's writer, the
// LLM router's usage ledger, the bus's connections — so a message pays
// nothing for them. Per message it pays for two things only: the stage
// timings it observes as the pump's StageObserver (two clock reads and one
// histogram observation per timed stage; `xmlpipe run` times one stage in
// SampleEvery, at random), and the envelope and failure counters it keeps
// as a pump watcher (a counter increment per event, every event).
//
// The metric families (all prefixed xmlpipe_):
//
//	envelopes_in_total{listener}         envelopes accepted and delivered to the listener
//	envelopes_out_total{listener}        envelopes the listener emitted (messages and replies)
//	huh_total{reason}                    <huh> failures by canned text (at most 32 reasons, then "other")
//	failures_total{kind}                 system-error and dead-letter events
//	conversations_completed_total        conversations that finished
//	stage_duration_seconds{stage,listener}  histogram: read (parse, repair, C14N, envelope
//	                                     check), validate (payload schema), handler; a random
//	                                     sample of the stages when the pump's ObserveEvery > 1
//	listener_handled_total{listener}     messages handled
//	listener_queue_depth{listener}       messages waiting in the listener's pipeline
//	listener_active{listener}            handlers running now
//	listener_paused{listener}            1 while paused
//	threads_live                         threads the thread registry holds: those of the
//	                                     conversations in flight and those of completed ones,
//	                                     kept for a continuation until platform.thread_ttl
//	                                     collects them (so it does not fall when one completes)
//	conversations_live                   conversations in flight (begun, not yet completed)
//	messages_in_flight                   messages admitted and not yet fully processed
//	messages_processed_total / messages_failed_total
//	uptime_seconds
//	journal_ops_enqueued_total / journal_ops_committed_total / journal_ops_failed_total
//	journal_commits_total / journal_rollbacks_total
//	journal_commit_duration_seconds      summary (sum, count): write latency, BEGIN to COMMIT
//	journal_checkpoint_duration_seconds  summary (sum, count): WAL checkpoints beside the writer
//	journal_backlog                      operations enqueued and not yet committed or failed
//	journal_queue_capacity / journal_queue_peak / journal_queue_blocked_total
//	llm_agent_tokens_total{agent,kind} / llm_agent_requests_total{agent}
//	llm_backend_tokens_total{backend,kind} / llm_backend_requests_total{backend}
//	llm_calls_total{backend,model,outcome}  LLM call attempts: ok, error (the backend failed it) or
//	                                     aborted (an operator's halt, cancel or kill, a reload stopped it)
//	llm_call_duration_seconds{backend,model}  histogram: one call, limits' wait included
//	llm_call_first_token_seconds{backend,model}  histogram: a streamed call's time to its first text
//	llm_call_tokens{backend,model,kind}  histogram: prompt and completion tokens of one call
//	bus_connections                      open WebSocket connections on the main bus
//	gateway_up{gateway}                  1 while the gateway's link is up
//	gateway_queued{gateway}              envelopes waiting for the peer's acknowledgement
//	gateway_envelopes_total{gateway,direction,kind}  federated envelopes in (accepted) and out (queued)
//	gateway_refused_total{gateway,reason}  federated envelopes and links refused
//	gateway_call_seconds{gateway}        histogram: round trip of the answered calls
//
// plus the Go runtime's and the process's standard collectors.
package observe
