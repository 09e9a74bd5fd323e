package pump

import "time"

// collector periodically frees idle threads (registry TTL) and the context
// history of idle threads, until stop is closed. Each sweep, and a last time
// at the stop, it has the store keep the last activity of the threads used
// since the sweep before (registry.Threads.SaveActivity), so a restart's
// idle times and TTL run on from it.
func (p *Pump) collector(every time.Duration, stop <-chan struct{}) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	saved := p.opts.Clock() // threads created since tell the store their creation
	save := func() {
		now := p.opts.Clock()
		p.threads.SaveActivity(saved)
		saved = now
	}
	for {
		select {
		case <-stop:
			save() // the last activity, for the next start's idle times
			return
		case <-t.C:
			save()
			threads := p.threads.Collect()
			slots := p.context.Collect()
			if threads > 0 || slots > 0 {
				p.log.Debug("idle state collected", "threads", threads, "context_threads", slots)
			}
		}
	}
}
