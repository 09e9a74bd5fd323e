package observe

import (
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// scraper reads the organism's own counters at scrape time: the pump's
// listeners and stats, the store's writer, the LLM usage ledger and the
// bus's connection count. A message pays nothing for these.
type scraper struct {
	src   atomic.Pointer[Sources]
	conns atomic.Pointer[func() int]
}

// Descriptors of the scraped families.
var (
	descHandled     = newDesc("listener_handled_total", "Messages the listener handled.", "listener")
	descQueue       = newDesc("listener_queue_depth", "Messages waiting in the listener's pipeline.", "listener")
	descActive      = newDesc("listener_active", "Handlers of the listener running now.", "listener")
	descPaused      = newDesc("listener_paused", "1 while the listener is paused.", "listener")
	descThreads     = newDesc("threads_live", "Threads the thread registry holds: those of the conversations in flight and those of completed ones, kept until the thread TTL collects them.")
	descConvs       = newDesc("conversations_live", "Conversations in flight: begun and not yet completed.")
	descInFlight    = newDesc("messages_in_flight", "Messages admitted and not yet fully processed.")
	descProcessed   = newDesc("messages_processed_total", "Messages handled by any listener.")
	descFailed      = newDesc("messages_failed_total", "Handler failures.")
	descRefused     = newDesc("messages_refused_total", "New external messages refused as busy, by target listener (empty: refused before the message was read) and reason: early (answered by its transport on admission's last word there, unread), queue_wait (max_queue_wait), share (the listener held its share), paused or halted (the share of a paused or halted listener), budget (the in-flight budget), user_share (its user's share), ingress (the ingress stages).", "listener", "reason")
	descChains      = newDesc("chains_stopped_total", "Forwards refused because they would have made their conversation's chain deeper than max_chain_depth (listeners forwarding to each other in a cycle).")
	descUptime      = newDesc("uptime_seconds", "Seconds since the pump started.")
	descJEnqueued   = newDesc("journal_ops_enqueued_total", "Write operations accepted into the store's queue.")
	descJCommitted  = newDesc("journal_ops_committed_total", "Write operations committed.")
	descJFailed     = newDesc("journal_ops_failed_total", "Write operations that failed.")
	descJCommits    = newDesc("journal_commits_total", "Transactions committed (group commits).")
	descJRollbacks  = newDesc("journal_rollbacks_total", "Transactions rolled back.")
	descJCommitTime = newDesc("journal_commit_duration_seconds", "Journal write latency: the store's transactions, BEGIN to COMMIT (sum and count).")
	descJCheckpoint = newDesc("journal_checkpoint_duration_seconds", "WAL checkpoint passes run beside the store's writer: their time (sum and count).")
	descJBacklog    = newDesc("journal_backlog", "Write operations enqueued and not yet committed or failed.")
	descJCapacity   = newDesc("journal_queue_capacity", "Size of the store writer's queue.")
	descJPeak       = newDesc("journal_queue_peak", "Largest number of operations waiting when the writer started a batch.")
	descJBlocked    = newDesc("journal_queue_blocked_total", "Asynchronous writes that found the queue full and waited.")
	descJStorageOK  = newDesc("journal_storage_ok", "1 while the store's commits succeed; 0 from a commit that failed for a full disk or an I/O error until one succeeds again (journal appends are refused meanwhile).")
	descJFailing    = newDesc("journal_storage_failing_seconds", "How long the store's commits have been failing for a full disk or an I/O error (0 while they succeed).")
	descJHeld       = newDesc("journal_held_writes", "Writes (kernel state, delivery marks) held for the storage to recover.")
	descJFailures   = newDesc("journal_storage_failures_total", "Times the store's commits began to fail for a full disk or an I/O error.")
	descAgentTokens = newDesc("llm_agent_tokens_total", "LLM tokens used by the agent.", "agent", "kind")
	descAgentReqs   = newDesc("llm_agent_requests_total", "LLM requests made for the agent.", "agent")
	descBackTokens  = newDesc("llm_backend_tokens_total", "LLM tokens used on the backend.", "backend", "kind")
	descBackReqs    = newDesc("llm_backend_requests_total", "LLM requests sent to the backend.", "backend")
	descConns       = newDesc("bus_connections", "Open WebSocket connections on the main bus.")
)

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
}

// Describe sends every scraped family's descriptor.
func (s *scraper) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHandled, descQueue, descActive, descPaused, descThreads, descConvs, descInFlight,
		descProcessed, descFailed, descChains, descUptime, descJEnqueued, descJCommitted, descJFailed, descJCommits, descJRollbacks,
		descJCommitTime, descJCheckpoint, descJBacklog, descJCapacity, descJPeak, descJBlocked,
		descJStorageOK, descJFailing, descJHeld, descJFailures, descAgentTokens, descAgentReqs, descBackTokens,
		descBackReqs, descConns} {
		ch <- d
	}
	ch <- descRefused
}

// Collect reads the sources (those set) and sends their values.
func (s *scraper) Collect(ch chan<- prometheus.Metric) {
	if n := s.conns.Load(); n != nil {
		ch <- gauge(descConns, float64((*n)()))
	}
	src := s.src.Load()
	if src == nil {
		return
	}
	for _, l := range src.Pump.Listeners() {
		ch <- counter(descHandled, float64(l.Handled), l.Name)
		ch <- gauge(descQueue, float64(l.QueueDepth), l.Name)
		ch <- gauge(descActive, float64(l.Active), l.Name)
		paused := 0.0
		if l.Paused {
			paused = 1
		}
		ch <- gauge(descPaused, paused, l.Name)
	}
	st := src.Pump.Stats()
	ch <- gauge(descThreads, float64(st.Threads))
	ch <- gauge(descConvs, float64(st.Conversations))
	ch <- gauge(descInFlight, float64(st.InFlight))
	ch <- counter(descProcessed, float64(st.Processed))
	ch <- counter(descFailed, float64(st.Failed))
	for _, r := range src.Pump.Refusals() {
		ch <- counter(descRefused, float64(r.Count), r.Listener, string(r.Reason))
	}
	ch <- counter(descChains, float64(st.ChainsStopped))
	ch <- gauge(descUptime, st.Uptime.Seconds())
	if j := src.Journal; j != nil {
		js, b := j.Stats(), j.Backlog()
		ch <- counter(descJEnqueued, float64(js.Enqueued))
		ch <- counter(descJCommitted, float64(js.Committed))
		ch <- counter(descJFailed, float64(js.Failed))
		ch <- counter(descJCommits, float64(js.Commits))
		ch <- counter(descJRollbacks, float64(js.Rollbacks))
		ch <- prometheus.MustNewConstSummary(descJCommitTime, uint64(js.Commits), js.CommitTime.Seconds(), nil)
		ch <- prometheus.MustNewConstSummary(descJCheckpoint, uint64(js.Checkpoints), js.CheckpointTime.Seconds(), nil)
		ch <- gauge(descJBacklog, float64(max(0, js.Enqueued-js.Committed-js.Failed)))
		ch <- gauge(descJCapacity, float64(b.Capacity))
		ch <- gauge(descJPeak, float64(b.Peak))
		ch <- counter(descJBlocked, float64(b.Blocked))
		if hj, ok := j.(interface{ Health() store.Health }); ok {
			h := hj.Health()
			storageOK, failing := 1.0, 0.0
			if !h.OK {
				storageOK, failing = 0, time.Since(h.Since).Seconds()
			}
			ch <- gauge(descJStorageOK, storageOK)
			ch <- gauge(descJFailing, failing)
			ch <- gauge(descJHeld, float64(h.Held))
			ch <- counter(descJFailures, float64(h.Failures))
		}
	}
	if u := src.LLM; u != nil {
		rep := u.Usage()
		for _, name := range sortedKeys(rep.Agents) {
			a := rep.Agents[name]
			ch <- counter(descAgentTokens, float64(a.PromptTokens), name, "prompt")
			ch <- counter(descAgentTokens, float64(a.CompletionTokens), name, "completion")
			ch <- counter(descAgentReqs, float64(a.Requests), name)
		}
		for _, name := range sortedKeys(rep.Backends) {
			b := rep.Backends[name]
			ch <- counter(descBackTokens, float64(b.PromptTokens), name, "prompt")
			ch <- counter(descBackTokens, float64(b.CompletionTokens), name, "completion")
			ch <- counter(descBackReqs, float64(b.Requests), name)
		}
	}
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
