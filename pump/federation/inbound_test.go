package federation

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestOrderedStageDeliversInOrder: checks run at once (all the workers
// busy together) and finish in reverse order, yet every envelope is
// delivered in the order it was added.
func TestOrderedStageDeliversInOrder(t *testing.T) {
	const workers, n = 8, 64
	gates := make([]chan struct{}, n)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	var running, peak atomic.Int32
	var mu sync.Mutex
	var got []int
	delivered := make(chan struct{})
	s := newOrderedStage(workers, 16, func(in *inbound) {
		i, _ := strconv.Atoi(string(in.b))
		updatePeak(&peak, running.Add(1))
		<-gates[i]
		running.Add(-1)
	}, func(in *inbound) {
		i, _ := strconv.Atoi(string(in.b))
		mu.Lock()
		got = append(got, i)
		if len(got) == n {
			close(delivered)
		}
		mu.Unlock()
	})
	go func() {
		for i := range n {
			s.add([]byte(strconv.Itoa(i)))
		}
	}()
	for w := 0; w < n; w += workers {
		// Wait until the window's checks all run, then let them finish
		// last first.
		for deadline := time.Now().Add(30 * time.Second); running.Load() < workers; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("window %d: %d checks running, want %d at once", w, running.Load(), workers)
			}
		}
		for i := w + workers - 1; i >= w; i-- {
			close(gates[i])
		}
	}
	select {
	case <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("not every envelope was delivered")
	}
	s.close()
	for i, v := range got {
		if v != i {
			t.Fatalf("delivered in the order %v", got)
		}
	}
	if peak.Load() < workers {
		t.Fatalf("at most %d checks ran at once, want %d", peak.Load(), workers)
	}
}

func updatePeak(peak *atomic.Int32, v int32) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// answer builds a signed reply envelope for call ref.
func (r *rawPeer) answer(ref string) (id string, env []byte) {
	r.t.Helper()
	id = uuid.NewString()
	e := &envelope{From: "a", Thread: ref, Link: link{ID: id, Kind: KindReply, Ref: ref, Sent: time.Now()},
		Payload: []byte(`<Echoed xmlns=""><Text>late</Text></Echoed>`)}
	b, err := envsig.Sign(r.key, e.build())
	if err != nil {
		r.t.Fatal(err)
	}
	return id, b
}

// TestLinkDeliversInOrder: a burst of answers, verified in parallel, is
// delivered and acknowledged in the order it was sent; one with a bad
// signature among them is refused with a nack (data, not a broken link),
// and the link serves a call afterwards.
func TestLinkDeliversInOrder(t *testing.T) {
	aKey := newKey(t)
	c := newCallee(t, aKey)
	r, err := dialRaw(t, c, aKey)
	if err != nil {
		t.Fatal(err)
	}
	const n, bad = 60, 23
	ids := make([]string, n)
	var burst [][]byte
	for i := range n {
		id, env := r.answer(fmt.Sprintf("r%03d", i))
		if i == bad {
			env = bytes.Replace(env, []byte("late"), []byte("LATE"), 1)
		}
		ids[i] = id
		burst = append(burst, env)
	}
	for _, env := range burst {
		if err := r.ws.WriteMessage(websocket.BinaryMessage, env); err != nil {
			t.Fatal(err)
		}
	}
	var acked []string
	nacked := ""
	_ = r.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(acked) < n-1 || nacked == "" {
		mt, b, err := r.ws.ReadMessage()
		if err != nil {
			t.Fatalf("after %d acks: %v", len(acked), err)
		}
		if mt != websocket.TextMessage {
			continue
		}
		var f frame
		if err := jsonUnmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		switch f.Type {
		case frameAck:
			acked = append(acked, f.ID)
		case frameNack:
			if nacked != "" {
				t.Fatalf("a second nack: %+v", f)
			}
			nacked = f.ID
		}
	}
	if nacked != ids[bad] {
		t.Fatalf("nacked %q, want the tampered envelope %q", nacked, ids[bad])
	}
	want := append(append([]string(nil), ids[:bad]...), ids[bad+1:]...)
	for i := range want {
		if acked[i] != want[i] {
			t.Fatalf("ack %d is for %s, want %s: acknowledged out of order", i, acked[i], want[i])
		}
	}
	// The gateway saw the answers in the order they were sent.
	var refs []string
	for _, m := range regexp.MustCompile(`nobody waits for dropped" gateway=a call=(r\d+)`).FindAllStringSubmatch(c.logs.String(), -1) {
		refs = append(refs, m[1])
	}
	if len(refs) != n-1 {
		t.Fatalf("%d answers delivered, want %d", len(refs), n-1)
	}
	for i, j := 0, 0; i < n; i++ {
		if i == bad {
			continue
		}
		if refs[j] != fmt.Sprintf("r%03d", i) {
			t.Fatalf("delivered in the order %v", refs)
		}
		j++
	}
	if !bytes.Contains([]byte(c.logs.String()), []byte("envelope refused: signature")) {
		t.Error("the bad signature was not logged")
	}
	if ack, _ := r.send(r.call("echo", `<Echo xmlns=""><Text>after</Text></Echo>`)); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("a call after the burst: %+v", ack)
	}
}

// TestReceivedCallSurvivesRestart: a call acknowledged by a callee is
// never injected twice after the callee restarts — its received row, done,
// refuses the copy the peer sends again byte for byte, also with the seen
// hashes gone — and a new call is still served; a call whose received row
// is not done (a crash before the journal held it) is served when the
// journal does not know it.
func TestReceivedCallSurvivesRestart(t *testing.T) {
	aKey, bKey := newKey(t), newKey(t)
	dir := t.TempDir()
	c1 := newCalleeIn(t, aKey, bKey, dir, nil)
	r1, err := dialRaw(t, c1, aKey)
	if err != nil {
		t.Fatal(err)
	}
	env := r1.call("echo", `<Echo xmlns=""><Text>once</Text></Echo>`)
	if ack, _ := r1.send(env); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("first copy: %+v", ack)
	}
	if got := waitSeen(t, c1, 1); len(got) != 1 {
		t.Fatalf("the echo saw %q", got)
	}
	stop := func(c *callee) { stopCallee(t, c) }
	stop(c1)

	c2 := newCalleeIn(t, aKey, bKey, dir, nil)
	r2, err := dialRaw(t, c2, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r2.send(env); ack.Type != frameAck || !ack.Duplicate {
		t.Fatalf("resend after a restart: %+v, want a duplicate", ack)
	}
	stop(c2)

	// A crash between the injection and the hash's commit: the hash is
	// gone, the received row (written before the injection) is not.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM federation_seen`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	c3 := newCalleeIn(t, aKey, bKey, dir, nil)
	r3, err := dialRaw(t, c3, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r3.send(env); ack.Type != frameAck || !ack.Duplicate {
		t.Fatalf("resend after a crash that lost its hash: %+v, want a duplicate", ack)
	}
	if ack, _ := r3.send(r3.call("echo", `<Echo xmlns=""><Text>new</Text></Echo>`)); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("a new call: %+v", ack)
	}
	if got := append(c2.seen(), waitSeen(t, c3, 1)...); len(got) != 1 || got[0] != "a:new" {
		t.Fatalf("after the restarts the echo saw %q, want only the new call", got)
	}
	stop(c3)

	// A crash after the received row's commit, before the journal held
	// the call: the journal (here: none) decides, and the call is served.
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, store.DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE federation_received SET done = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM federation_seen`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	c4 := newCalleeIn(t, aKey, bKey, dir, nil)
	r4, err := dialRaw(t, c4, aKey)
	if err != nil {
		t.Fatal(err)
	}
	if ack, _ := r4.send(env); ack.Type != frameAck || ack.Duplicate {
		t.Fatalf("resend of a call the journal never held: %+v, want it served", ack)
	}
	if got := waitSeen(t, c4, 1); len(got) != 1 || got[0] != "a:once" {
		t.Fatalf("the echo saw %q, want the call served", got)
	}
}

// waitSeen waits (30 s at most) until c's echo handled n calls — an
// acknowledgement says the call is in the pump, not that it ran — and
// returns what it saw.
func waitSeen(t *testing.T, c *callee, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); len(c.seen()) < n && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	return c.seen()
}
