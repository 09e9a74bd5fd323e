package wasm

import (
	"context"
	"errors"
	"os"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestCallsDoNotLeakOpenFiles: a reactor that leaves files open used to
// keep them in its pooled instance, which then served the next calls
// (other conversations) until every open got EAGAIN. An instance a call
// left files open in is now dropped, so each call has the whole budget and
// nothing stays open after it.
func TestCallsDoNotLeakOpenFiles(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(es)
	}
	_, dir := sandboxLayout(t)
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, Instances: 1})
	if r := runOp(t, m, "read", "/data/hello.txt", ""); !r.OK {
		t.Fatalf("read: %+v", r)
	}
	before := fds() // one pooled instance, its /data open
	for i := range 3 {
		if r := runOp(t, m, "hold", "/data/hello.txt", "100"); !r.OK || r.Result != "100" {
			t.Fatalf("call %d: %+v, want 100 files opened", i+1, r)
		}
		if n := fds() - before; n > 8 { // the runtime's own may come and go
			t.Fatalf("call %d: %d descriptors more than before it, want the call's files closed", i+1, n)
		}
	}
	if r := runOp(t, m, "read", "/data/hello.txt", ""); !r.OK || r.Result != "inside" {
		t.Fatalf("read after: %+v", r)
	}
}

// TestEachInstanceHasItsOwnBudget: the open-file budget was one per
// module, the /data each instance preopens included, so instances took
// each other's (and 256 instances used it all). Each instance's view of
// the directory now counts on its own.
func TestEachInstanceHasItsOwnBudget(t *testing.T) {
	_, dir := sandboxLayout(t)
	r, err := openRootFS(dir, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := r.view(), r.view()
	var held []experimentalsys.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for i := range maxOpenFiles {
		f, errno := a.OpenFile("hello.txt", experimentalsys.O_RDONLY, 0)
		if errno != 0 {
			t.Fatalf("open %d through a: %v", i+1, errno)
		}
		held = append(held, f)
	}
	if _, errno := a.OpenFile("hello.txt", experimentalsys.O_RDONLY, 0); !errors.Is(errno, experimentalsys.EAGAIN) {
		t.Fatalf("open %d through a: %v, want EAGAIN", maxOpenFiles+1, errno)
	}
	f, errno := b.OpenFile("hello.txt", experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		t.Fatalf("open through b while a holds %d: %v", maxOpenFiles, errno)
	}
	held = append(held, f)
	if got, want := a.openFiles(), int64(maxOpenFiles); got != want {
		t.Fatalf("a counts %d open, want %d", got, want)
	}
	if got := b.openFiles(); got != 1 {
		t.Fatalf("b counts %d open, want 1", got)
	}
}

// TestInstancesDoNotShareTheBudget: every instance's Go runtime opens its
// /data when it starts, and with one budget per module the instances past
// it had none left (with the real budget: the 256th instance). Here the
// budget is 4 and six pooled instances each read a file.
func TestInstancesDoNotShareTheBudget(t *testing.T) {
	_, dir := sandboxLayout(t)
	const n = 6
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, Instances: n})
	m.dir.max = 4
	var insts []*instance
	for i := range n {
		inst, err := m.newInstance(context.Background())
		if err != nil {
			t.Fatalf("instance %d: %v", i+1, err)
		}
		insts = append(insts, inst)
	}
	for _, inst := range insts {
		m.put(inst)
	}
	for i := range n { // the pool hands the instances out in turn
		if r := runOp(t, m, "read", "/data/hello.txt", ""); !r.OK || r.Result != "inside" {
			t.Fatalf("read %d: %+v", i+1, r)
		}
	}
}
