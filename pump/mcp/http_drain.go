package mcp

import "sync"

// httpDrain runs a function once the bridge's life has ended and no HTTP
// request is being served any more: Close ends the sessions clients left
// open only after the calls it cancelled were answered (their answers
// ride the sessions' streams), never under them.
type httpDrain struct {
	mu      sync.Mutex
	serving int
	ended   bool
	once    sync.Once
	then    func()
}

// enter counts a request being served.
func (d *httpDrain) enter() {
	d.mu.Lock()
	d.serving++
	d.mu.Unlock()
}

// leave counts a request served; the last one after end runs then.
func (d *httpDrain) leave() {
	d.mu.Lock()
	d.serving--
	run := d.ended && d.serving == 0
	d.mu.Unlock()
	if run {
		d.once.Do(d.then)
	}
}

// end marks the bridge's life over; with no request being served, then
// runs at once.
func (d *httpDrain) end() {
	d.mu.Lock()
	d.ended = true
	run := d.serving == 0
	d.mu.Unlock()
	if run {
		d.once.Do(d.then)
	}
}
