package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCalculatorAnswers(t *testing.T) {
	for _, kind := range []Kind{Reactor, Command} {
		t.Run(string(kind), func(t *testing.T) {
			m := compileGuest(t, "calc", kind, Sandbox{})
			if m.Kind() != kind {
				t.Fatalf("kind = %s, want %s", m.Kind(), kind)
			}
			tests := []struct{ in, want string }{
				{"<Calc><A>2</A><B>40</B><Op>add</Op></Calc>", "<CalcResult><Value>42</Value></CalcResult>"},
				{"<Calc><A>6</A><B>7</B><Op>mul</Op></Calc>", "<CalcResult><Value>42</Value></CalcResult>"},
				{"<Calc><A>1</A><B>4</B><Op>div</Op></Calc>", "<CalcResult><Value>0.25</Value></CalcResult>"},
			}
			for _, tc := range tests {
				out, err := m.Call(context.Background(), []byte(tc.in))
				if err != nil {
					t.Fatalf("%s: %v", tc.in, err)
				}
				if string(out) != tc.want {
					t.Fatalf("%s: got %s, want %s", tc.in, out, tc.want)
				}
			}
			_, err := m.Call(context.Background(), []byte("<Calc><A>1</A><B>0</B><Op>div</Op></Calc>"))
			if err == nil || !strings.Contains(err.Error(), "division by zero") {
				t.Fatalf("division by zero: err = %v", err)
			}
			// The module still answers after a failure.
			if out, err := m.Call(context.Background(), []byte("<Calc><A>1</A><B>1</B></Calc>")); err != nil ||
				string(out) != "<CalcResult><Value>2</Value></CalcResult>" {
				t.Fatalf("after failure: %s, %v", out, err)
			}
		})
	}
}

func TestInfiniteLoopStoppedAtTimeout(t *testing.T) {
	for _, kind := range []Kind{Reactor, Command} {
		t.Run(string(kind), func(t *testing.T) {
			m := compileGuest(t, "loop", kind, Sandbox{Timeout: 200 * time.Millisecond})
			start := time.Now()
			_, err := m.Call(context.Background(), []byte("<Loop/>"))
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			if d := time.Since(start); d > 30*time.Second { // the deadline plus a loaded machine's delays
				t.Fatalf("took %s", d)
			}
		})
	}
}

func TestReadOutsideDirFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("inside"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir})
	if r := runOp(t, m, "read", "/data/hello.txt", ""); !r.OK || r.Result != "inside" {
		t.Fatalf("inside: %+v", r)
	}
	for _, p := range []string{outside, "/data/../" + filepath.Base(outside), "/etc/passwd", "/data/../../etc/passwd"} {
		if r := runOp(t, m, "read", p, ""); r.OK {
			t.Fatalf("%s: read %q", p, r.Result)
		}
	}
	// No directory at all: even /data is not there.
	bare := compileGuest(t, "ops", Reactor, Sandbox{})
	if r := runOp(t, bare, "read", "/data/hello.txt", ""); r.OK {
		t.Fatalf("no dir: read %q", r.Result)
	}
}

// TestMemoryOverLimitTraps: the ops guest's hog asks for its megabytes in
// one allocation, so the request over the cap fails at once however slowly
// the guest runs; the deadline (far off) is not what stops it.
func TestMemoryOverLimitTraps(t *testing.T) {
	m := compileGuest(t, "ops", Reactor, Sandbox{MemoryMB: 48, Timeout: 5 * time.Minute})
	hog := func(mb string) ([]byte, error) {
		return m.Call(context.Background(), []byte("<Ops><Do>hog</Do><Arg>"+mb+"</Arg></Ops>"))
	}
	if out, err := hog("4"); err != nil || !strings.Contains(string(out), "<OK>true</OK><Result>4</Result>") {
		t.Fatalf("within the limit: %s, %v", out, err)
	}
	if _, err := hog("200"); !errors.Is(err, ErrMemory) {
		t.Fatalf("err = %v, want ErrMemory", err)
	}
	// A fresh instance replaces the dead one.
	if out, err := hog("1"); err != nil || !strings.Contains(string(out), "<OK>true</OK><Result>1</Result>") {
		t.Fatalf("after the trap: %s, %v", out, err)
	}
}

func TestConcurrentCallsShareBoundedInstances(t *testing.T) {
	m := compileGuest(t, "calc", Reactor, Sandbox{Instances: 2})
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			in := []byte("<Calc><A>" + strconv.Itoa(i) + "</A><B>1</B></Calc>")
			out, err := m.Call(context.Background(), in)
			if err == nil && string(out) != "<CalcResult><Value>"+strconv.Itoa(i+1)+"</Value></CalcResult>" {
				err = errors.New("wrong answer " + string(out))
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(m.idle) > 2 {
		t.Fatalf("%d idle instances, cap 2", len(m.idle))
	}
	// A call waiting for an instance gives up with its context.
	m.slots <- struct{}{}
	m.slots <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.Call(ctx, []byte("<Calc><A>1</A><B>1</B></Calc>")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	<-m.slots
	<-m.slots
}

func TestEnvironmentAndDirectoryCapabilities(t *testing.T) {
	t.Setenv("XMLPIPE_WASM_ALLOWED", "visible")
	t.Setenv("XMLPIPE_WASM_SECRET", "hidden")
	dir := t.TempDir()
	ro := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, Env: []string{"XMLPIPE_WASM_ALLOWED"}})
	if r := runOp(t, ro, "env", "XMLPIPE_WASM_ALLOWED", ""); !r.OK || r.Result != "visible" {
		t.Fatalf("allowed variable: %+v", r)
	}
	if r := runOp(t, ro, "env", "XMLPIPE_WASM_SECRET", ""); !r.OK || r.Result != "" {
		t.Fatalf("variable not on the list: %+v", r)
	}
	if r := runOp(t, ro, "write", "/data/out.txt", "written by the guest"); r.OK {
		t.Fatalf("write to a read-only dir: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the read-only dir was written")
	}
	rw := compileGuest(t, "ops", Reactor, Sandbox{Dir: dir, DirWritable: true})
	if r := runOp(t, rw, "write", "/data/out.txt", "written by the guest"); !r.OK {
		t.Fatalf("write to a writable dir: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "written by the guest" {
		t.Fatalf("host file: %q %v", b, err)
	}
	if r := runOp(t, rw, "write", "/tmp/escape.txt", "x"); r.OK {
		t.Fatalf("write outside the dir: %+v", r)
	}
}

// TestCancelInterruptsTheGuest: a call whose context is cancelled (the
// conversation killed, the organism stopping) interrupts the running guest
// at once — long before its own deadline — and the instance it ran on is
// closed, not put back in the pool.
func TestCancelInterruptsTheGuest(t *testing.T) {
	for _, tc := range []struct {
		kind        Kind
		guest, spin string
	}{
		{Reactor, "ops", "<Ops><Do>spin</Do></Ops>"},
		{Command, "loop", "<Loop/>"}, // a fresh instance per call: nothing pooled
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			m := compileGuest(t, tc.guest, tc.kind, Sandbox{Instances: 1, Timeout: 10 * time.Minute})
			ping := []byte("<Ops><Do>ping</Do></Ops>")
			var pooled *instance
			if tc.kind == Reactor {
				if out, err := m.Call(context.Background(), ping); err != nil || !strings.Contains(string(out), "pong") {
					t.Fatalf("ping: %s, %v", out, err)
				}
				pooled = <-m.idle // the warm instance the next call takes
				m.idle <- pooled
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := m.Call(ctx, []byte(tc.spin))
				done <- err
			}()
			// Wait until the call holds the one slot (and, for a reactor, took
			// the pooled instance), then cancel it.
			for deadline := time.Now().Add(30 * time.Second); len(m.slots) == 0 || len(m.idle) != 0; {
				if time.Now().After(deadline) {
					t.Fatal("the call never started")
				}
				time.Sleep(time.Millisecond)
			}
			cancel()
			start := time.Now()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the guest still runs 30 s after its context was cancelled")
			}
			t.Logf("interrupted %s after the cancel", time.Since(start))
			if pooled == nil {
				return
			}
			if !pooled.mod.IsClosed() {
				t.Fatal("the interrupted instance is still open")
			}
			if len(m.idle) != 0 {
				t.Fatal("the interrupted instance went back to the pool")
			}
			if out, err := m.Call(context.Background(), ping); err != nil || !strings.Contains(string(out), "pong") {
				t.Fatalf("after the cancel: %s, %v", out, err)
			}
			if inst := <-m.idle; inst == pooled {
				t.Fatal("the interrupted instance served again")
			}
		})
	}
}

// TestCallerDeadlineIsNotTheSandboxTimeout: a guest stopped because the
// caller's own deadline passed (a handler timeout) says so — it wraps
// context.DeadlineExceeded, not ErrTimeout, which names the sandbox's.
func TestCallerDeadlineIsNotTheSandboxTimeout(t *testing.T) {
	m := compileGuest(t, "ops", Reactor, Sandbox{Timeout: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := m.Call(ctx, []byte("<Ops><Do>spin</Do></Ops>"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want the caller's context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v", err)
	}
}

// TestCloseInterruptsTheGuest: closing a module (the organism stopping, the
// listener reloaded or removed) interrupts a guest that is running, and its
// call fails with ErrClosed — never a command module's success with the
// partial output it had written, nor a reactor's "exited with status 0".
func TestCloseInterruptsTheGuest(t *testing.T) {
	for _, tc := range []struct {
		kind        Kind
		guest, spin string
	}{
		{Reactor, "ops", "<Ops><Do>spin</Do></Ops>"},
		{Command, "loop", "<Loop/>"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			m := compileGuest(t, tc.guest, tc.kind, Sandbox{Instances: 1, Timeout: 10 * time.Minute})
			type answer struct {
				out []byte
				err error
			}
			done := make(chan answer, 1)
			go func() {
				out, err := m.Call(context.Background(), []byte(tc.spin))
				done <- answer{out, err}
			}()
			for deadline := time.Now().Add(30 * time.Second); len(m.slots) == 0; { // the call holds the one slot
				if time.Now().After(deadline) {
					t.Fatal("the call never started")
				}
				time.Sleep(time.Millisecond)
			}
			if err := m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case a := <-done:
				if !errors.Is(a.err, ErrClosed) {
					t.Fatalf("Call = %q, %v; want ErrClosed", a.out, a.err)
				}
				if !strings.Contains(a.err.Error(), "interrupted") {
					t.Errorf("err = %v, want it to say the guest was interrupted", a.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the guest still runs 30 s after its module was closed")
			}
		})
	}
}
