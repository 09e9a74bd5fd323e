package oob

// activeThreads counts the threads whose conversation is running, as the
// bus's GET /api/v1/organism does: not the threads of completed
// conversations the registry keeps for a continuation until the thread TTL
// collects them (those are pump.Stats.Threads, xmlpipe_threads_live), so
// get-status says 0 on an organism with nothing to do.
func (o *operations) activeThreads() int {
	threads := o.t.Pump.Threads()
	n := 0
	for _, r := range threads.Records() {
		if o.t.Pump.Running(threads.Root(r.ID)) {
			n++
		}
	}
	return n
}
