package federation

import (
	"crypto/tls"
	"sync"
	"syscall"
)

// corker coalesces a link's writes of a batch — the envelopes the sender
// writes from the outbox, the acknowledgements one commit made durable —
// into as few TCP segments as the socket takes (TCP_CORK on Linux): each
// WebSocket message is still its own TLS record and write, but they leave
// together once the batch is written, so the peer's reader wakes once for
// them rather than once per message, and loopback's and the network's
// per-segment cost is paid once. Writers of a link may batch at once
// (sender and acker): the socket is corked while any of them batches and
// uncorked when the last is done, so nothing waits in it after a batch.
type corker struct {
	mu   sync.Mutex
	n    int
	raw  syscall.RawConn // nil: no TCP socket under the link (a test's pipe)
	once sync.Once
	// find returns the link's connection, looked up at the first batch.
	find func() any
}

// batch runs write, which writes n messages, with the socket corked when
// there are several.
func (k *corker) batch(n int, write func()) {
	if n < 2 || !k.begin() {
		write()
		return
	}
	defer k.end()
	write()
}

// begin corks the socket unless a batch holds it corked already; it
// reports whether there is a socket to cork.
func (k *corker) begin() bool {
	k.once.Do(func() { k.raw = rawConnOf(k.find()) })
	if k.raw == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n++; k.n == 1 {
		setCork(k.raw, true)
	}
	return true
}

// end uncorks the socket (sending what it holds) once no batch is left.
func (k *corker) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n--; k.n == 0 {
		setCork(k.raw, false)
	}
}

// rawConnOf is the socket under c, a link's connection (TLS over TCP), or
// nil.
func rawConnOf(c any) syscall.RawConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}
