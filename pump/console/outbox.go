package console

import (
	"io"
	"strings"
	"sync"
)

// maxUnclaimed bounds the completions remembered for conversations nobody has
// waited for yet (a completion can arrive before Send returns its thread).
const maxUnclaimed = 64

// outbox serialises everything the console writes: command output, listener
// output arriving on the organism's goroutines and log lines. One goroutine
// drains it, so writers never block on the terminal and lines never
// interleave. It also tells a piped session when a conversation completed,
// in order with the output that preceded the completion.
type outbox struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    []item
	stopping bool
	track    bool
	waits    map[string]*convWait
	// unclaimed lists completed conversations nobody waited for yet, oldest first.
	unclaimed []string
}

// item is a line to write or, when complete is set, a completion to signal.
type item struct {
	text     string
	complete string
}

// convWait is one conversation a piped session waits for.
type convWait struct {
	done      chan struct{}
	closed    bool
	abandoned bool
}

func newOutbox() *outbox {
	o := &outbox{waits: map[string]*convWait{}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// line queues text (one or more lines) for writing.
func (o *outbox) line(text string) {
	o.push(item{text: text})
}

// completed queues the completion of a conversation.
func (o *outbox) completed(conv string) {
	o.push(item{complete: conv})
}

func (o *outbox) push(it item) {
	o.mu.Lock()
	o.items = append(o.items, it)
	o.mu.Unlock()
	o.cond.Signal()
}

// start drains the outbox into w until the returned stop is called; stop
// writes what is still queued, then returns. track makes completions
// observable through wait.
func (o *outbox) start(w io.Writer, track bool) (stop func()) {
	o.mu.Lock()
	o.stopping, o.track = false, track
	o.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.drain(w)
	}()
	return func() {
		o.mu.Lock()
		o.stopping = true
		o.mu.Unlock()
		o.cond.Signal()
		<-done
	}
}

func (o *outbox) drain(w io.Writer) {
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			_, _ = io.WriteString(w, buf.String()) // nothing better to do with a broken output
			buf.Reset()
		}
	}
	for {
		o.mu.Lock()
		for len(o.items) == 0 && !o.stopping {
			o.cond.Wait()
		}
		batch := o.items
		o.items = nil
		stopping := o.stopping
		o.mu.Unlock()
		for _, it := range batch {
			if it.complete == "" {
				buf.WriteString(it.text)
				buf.WriteByte('\n')
				continue
			}
			flush()
			o.signal(it.complete)
		}
		flush()
		if stopping && len(batch) == 0 {
			return
		}
	}
}

// signal records that conv completed, after everything before it was written.
func (o *outbox) signal(conv string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.track {
		return
	}
	cw := o.waits[conv]
	switch {
	case cw == nil:
		o.waits[conv] = &convWait{done: closedChan(), closed: true}
		o.unclaimed = append(o.unclaimed, conv)
		if len(o.unclaimed) > maxUnclaimed {
			delete(o.waits, o.unclaimed[0])
			o.unclaimed = o.unclaimed[1:]
		}
	case cw.abandoned:
		delete(o.waits, conv)
	case !cw.closed:
		cw.closed = true
		close(cw.done)
	}
}

// wait returns a channel closed when conv has completed and everything said
// before its completion has been written.
func (o *outbox) wait(conv string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	cw := o.waits[conv]
	if cw == nil {
		cw = &convWait{done: make(chan struct{})}
		o.waits[conv] = cw
	}
	return cw.done
}

// release forgets conv after a wait: done when it completed, abandoned (its
// late completion is dropped) when the wait gave up.
func (o *outbox) release(conv string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cw := o.waits[conv]
	if cw == nil {
		return
	}
	if !cw.closed {
		cw.abandoned = true
		return
	}
	delete(o.waits, conv)
	for i, c := range o.unclaimed {
		if c == conv {
			o.unclaimed = append(o.unclaimed[:i], o.unclaimed[i+1:]...)
			break
		}
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
