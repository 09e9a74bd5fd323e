package federation

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
)

// failingStorage is a pump.Storage whose failure the test switches on.
type failingStorage struct{ failing atomic.Bool }

// Failing returns a full disk while the storage fails.
func (s *failingStorage) Failing() error {
	if s.failing.Load() {
		return errors.New("disk full: database or disk is full (13)")
	}
	return nil
}

// TestCallRefusedWhileStorageFails: a peer's call while this side's
// storage cannot commit is nacked busy-style — the peer's caller gets
// pump.ErrBusy with the hint, and the call may be made again — saying
// why, before the pump reads anything of it or anything of it is
// recorded; sent again once the storage recovers, it is delivered, not
// dropped as a copy.
func TestCallRefusedWhileStorageFails(t *testing.T) {
	aKey := newKey(t)
	st := &failingStorage{}
	var reads atomic.Int64
	c := newCalleePumped(t, aKey, newKey(t), "", nil, nil, nil, func(o *pump.Options) {
		o.Storage = st
		o.Observer = pump.StageObserverFunc(func(s pump.StageSample) {
			if s.Stage == pump.StageRead {
				reads.Add(1)
			}
		})
	})
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	st.failing.Store(true)
	one := r.call("echo", `<Echo xmlns=""><Text>one</Text></Echo>`)
	before := reads.Load()
	nack, _ := r.send(one)
	const want = "The organism cannot journal messages now (disk full: database or disk is full (13)); nothing was done; retry later"
	if nack.Type != frameNack || nack.Reason != ReasonBusy || nack.RetryAfter != 5 || nack.Error != want {
		t.Errorf("call while the storage fails: %+v, want a busy nack saying %q retry after 5", nack, want)
	}
	if n := reads.Load() - before; n != 0 {
		t.Errorf("the pump read %d messages for a call refused while the storage failed, want none", n)
	}
	var refused *pump.BusyError
	if err := busyRefusal("b", nack.Error, nack.RetryAfter); !errors.As(err, &refused) || refused.Reason != "peer: "+want {
		t.Errorf("the caller's error %v: want pump.ErrBusy with the peer's text", err)
	}

	st.failing.Store(false)
	if ack, _ := r.send(one); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("the refused call sent again once the storage recovered: %+v, want it taken", ack)
	}
	if diff := cmp.Diff([]string{"a:one"}, waitSeen(t, c, 1)); diff != "" {
		t.Errorf("echoed (-want +got):\n%s", diff)
	}
}
