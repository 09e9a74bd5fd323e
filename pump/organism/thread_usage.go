package organism

import (
	"context"
	"sync"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// minUsageSweep is how many ended threads' usage the ledger keeps at least
// before threadUsageEnder sweeps the ones whose history is gone.
const minUsageSweep = 1024

// threadUsageEnder returns the Threads.OnEnd subscriber that keeps the
// router's per-thread token ledger (budgets.thread_tokens) in step with the
// threads. It must be subscribed after the pump's own, which lets the
// context buffer keep the history of the conversations that may continue.
// An ended thread's usage is forgotten unless its history is kept: such a
// conversation continues later on the same thread id, and its budget must
// go on counting rather than start again at every turn. The usage of kept
// threads is swept once neither the thread nor its history exists any
// more, each time as many threads as the ledger held after the last sweep
// (at least minUsageSweep) have been kept since.
func threadUsageEnder(r *llm.Router, threads *registry.Threads, ctx *registry.ContextBuffer) func(ids []string) {
	var (
		mu              sync.Mutex
		kept, sweepFrom = 0, minUsageSweep
	)
	return func(ids []string) {
		gone := make([]string, 0, len(ids))
		for _, id := range ids {
			if !ctx.ThreadExists(id) {
				gone = append(gone, id)
			}
		}
		r.ThreadsEnded(gone)
		mu.Lock()
		defer mu.Unlock()
		if kept += len(ids) - len(gone); kept < sweepFrom {
			return
		}
		left := r.ForgetThreadsUnless(func(id string) bool { return threads.Known(id) || ctx.ThreadExists(id) })
		kept, sweepFrom = 0, max(minUsageSweep, left)
	}
}

// restoreThreadUsage gives the router's ledger the tokens the journal of
// calls says were spent on the threads still live or kept for their
// conversation to continue: a restart (or a crash in a loop) would
// otherwise give every such thread its whole budget again.
func restoreThreadUsage(r *llm.Router, s *store.Store, threads *registry.Threads, cb *registry.ContextBuffer) error {
	totals, err := s.ThreadCallTotals(context.Background(), func(id string) bool {
		return threads.Known(id) || cb.ThreadExists(id)
	})
	if err != nil || len(totals) == 0 {
		return err
	}
	used := make(map[string]llm.Usage, len(totals))
	for id, t := range totals {
		used[id] = llm.Usage{PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens, Requests: t.Calls}
	}
	r.RestoreThreadUsage(used)
	return nil
}
