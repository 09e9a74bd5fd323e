package observe

import (
	"log/slog"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// fakeJournal is a store with fixed statistics.
type fakeJournal struct{}

func (fakeJournal) Stats() store.Stats {
	return store.Stats{Enqueued: 10, Committed: 7, Failed: 1, Commits: 3, Rollbacks: 1, CommitTime: 1500 * time.Millisecond,
		Checkpoints: 2, CheckpointTime: 250 * time.Millisecond}
}
func (fakeJournal) Backlog() store.Backlog { return store.Backlog{Peak: 4, Capacity: 64, Blocked: 2} }

// Health reports a disk full for an hour, with writes held.
func (fakeJournal) Health() store.Health {
	return store.Health{Error: "database or disk is full (13)", Since: time.Now().Add(-time.Hour), Held: 3, Failures: 2}
}

// fakeUsage is an LLM router with a fixed ledger.
type fakeUsage struct{}

func (fakeUsage) Usage() UsageReport {
	return UsageReport{
		Agents:   map[string]Usage{"planner": {PromptTokens: 100, CompletionTokens: 20, Requests: 3}},
		Backends: map[string]Usage{"openai": {PromptTokens: 100, CompletionTokens: 20, Requests: 4}},
	}
}

func TestScrapedSources(t *testing.T) {
	p, err := pump.New(pump.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	if err := m.Attach(Sources{Pump: p, Journal: fakeJournal{}, LLM: fakeUsage{}}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.CountConnections(func() int { return 5 })
	fams := gather(t, m)
	if s := sample(fams, "xmlpipe_journal_commit_duration_seconds").GetSummary(); s.GetSampleCount() != 3 || s.GetSampleSum() != 1.5 {
		t.Errorf("journal_commit_duration_seconds: count %d sum %v, want 3 and 1.5", s.GetSampleCount(), s.GetSampleSum())
	}
	if v := sample(fams, "xmlpipe_journal_storage_failing_seconds").GetGauge().GetValue(); v < 3600 || v > 3600+600 {
		t.Errorf("journal_storage_failing_seconds = %v, want the hour the fake has been failing", v)
	}
	if s := sample(fams, "xmlpipe_journal_checkpoint_duration_seconds").GetSummary(); s.GetSampleCount() != 2 || s.GetSampleSum() != 0.25 {
		t.Errorf("journal_checkpoint_duration_seconds: count %d sum %v, want 2 and 0.25", s.GetSampleCount(), s.GetSampleSum())
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"xmlpipe_journal_ops_enqueued_total", nil, 10},
		{"xmlpipe_journal_ops_committed_total", nil, 7},
		{"xmlpipe_journal_ops_failed_total", nil, 1},
		{"xmlpipe_journal_commits_total", nil, 3},
		{"xmlpipe_journal_rollbacks_total", nil, 1},
		{"xmlpipe_journal_backlog", nil, 2},
		{"xmlpipe_journal_queue_capacity", nil, 64},
		{"xmlpipe_journal_queue_peak", nil, 4},
		{"xmlpipe_journal_queue_blocked_total", nil, 2},
		{"xmlpipe_journal_storage_ok", nil, 0},
		{"xmlpipe_journal_held_writes", nil, 3},
		{"xmlpipe_journal_storage_failures_total", nil, 2},
		{"xmlpipe_llm_agent_tokens_total", []string{"agent", "planner", "kind", "prompt"}, 100},
		{"xmlpipe_llm_agent_tokens_total", []string{"agent", "planner", "kind", "completion"}, 20},
		{"xmlpipe_llm_agent_requests_total", []string{"agent", "planner"}, 3},
		{"xmlpipe_llm_backend_tokens_total", []string{"backend", "openai", "kind", "prompt"}, 100},
		{"xmlpipe_llm_backend_requests_total", []string{"backend", "openai"}, 4},
		{"xmlpipe_bus_connections", nil, 5},
		{"xmlpipe_threads_live", nil, 0},
		{"xmlpipe_chains_stopped_total", nil, 0},
	} {
		s := sample(fams, c.name, c.labels...)
		if s == nil {
			t.Errorf("%s%v missing", c.name, c.labels)
			continue
		}
		got := s.GetGauge().GetValue() + s.GetCounter().GetValue()
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
