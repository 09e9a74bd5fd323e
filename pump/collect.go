package pump

import "time"

// collector periodically frees idle threads (registry TTL) and the context
// history of idle threads, until stop is closed.
func (p *Pump) collector(every time.Duration, stop <-chan struct{}) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			threads := p.threads.Collect()
			slots := p.context.Collect()
			if threads > 0 || slots > 0 {
				p.log.Debug("idle state collected", "threads", threads, "context_threads", slots)
			}
		}
	}
}
