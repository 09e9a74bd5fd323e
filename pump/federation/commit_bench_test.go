package federation

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGroupCommit is the state writes of one call on each side — the
// outbox entry and call record, the received and served rows, the seen
// hash of the reply, and the deletes that follow — from 32 calls at once,
// in a store's group commits (nothing else journaled: the received rows
// force their commit, as without a journal).
func BenchmarkGroupCommit(b *testing.B) {
	d, err := openDB(openStore(b, b.TempDir(), slog.New(slog.DiscardHandler)), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.close()
	b.SetParallelism(16)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("call-%d", n.Add(1))
			now := time.Now()
			seq, err := d.enqueue("g", id, []byte("<envelope/>"), now, &callRecord{callerThread: id, digest: []byte(id)})
			if err != nil {
				b.Error(err)
				return
			}
			done := make(chan error, 2)
			d.serveBegin("c"+id, "g", id, now, true, func(err error) { done <- err })
			if err := <-done; err != nil {
				b.Error(err)
				return
			}
			d.callInjected("c"+id, func(err error) { done <- err })
			d.markSeen([]byte("reply"+id), now, now, func(err error) { done <- err })
			for range 2 {
				if err := <-done; err != nil {
					b.Error(err)
					return
				}
			}
			d.serveEnd("c"+id, false, nil)
			d.acked(seq, nil)
			d.callDone(id, nil)
		}
	})
}
