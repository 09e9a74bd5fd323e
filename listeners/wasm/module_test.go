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
	m := compileGuest(t, "readfile", Reactor, Sandbox{Dir: dir})
	out, err := m.Call(context.Background(), []byte("<ReadFile><Path>/data/hello.txt</Path></ReadFile>"))
	if err != nil || string(out) != "<FileContent><Text>inside</Text></FileContent>" {
		t.Fatalf("inside: %s, %v", out, err)
	}
	for _, p := range []string{outside, "/data/../" + filepath.Base(outside), "/etc/passwd", "/data/../../etc/passwd"} {
		_, err := m.Call(context.Background(), []byte("<ReadFile><Path>"+p+"</Path></ReadFile>"))
		if !errors.Is(err, ErrFailed) {
			t.Fatalf("%s: err = %v, want ErrFailed", p, err)
		}
	}
	// No directory at all: even /data is not there.
	bare := compileGuest(t, "readfile", Reactor, Sandbox{})
	if _, err := bare.Call(context.Background(), []byte("<ReadFile><Path>/data/hello.txt</Path></ReadFile>")); !errors.Is(err, ErrFailed) {
		t.Fatalf("no dir: err = %v", err)
	}
}

// TestMemoryOverLimitTraps: memhog asks for its megabytes in one
// allocation, so the request over the cap fails at once however slowly the
// guest runs; the deadline (far off) is not what stops it.
func TestMemoryOverLimitTraps(t *testing.T) {
	m := compileGuest(t, "memhog", Reactor, Sandbox{MemoryMB: 48, Timeout: 5 * time.Minute})
	if out, err := m.Call(context.Background(), []byte("<Hog><MB>4</MB></Hog>")); err != nil ||
		string(out) != "<Hogged><MB>4</MB></Hogged>" {
		t.Fatalf("within the limit: %s, %v", out, err)
	}
	_, err := m.Call(context.Background(), []byte("<Hog><MB>200</MB></Hog>"))
	if !errors.Is(err, ErrMemory) {
		t.Fatalf("err = %v, want ErrMemory", err)
	}
	// A fresh instance replaces the dead one.
	if out, err := m.Call(context.Background(), []byte("<Hog><MB>1</MB></Hog>")); err != nil ||
		string(out) != "<Hogged><MB>1</MB></Hogged>" {
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
	probe := func(sb Sandbox, env, write string) string {
		t.Helper()
		m := compileGuest(t, "probe", Reactor, sb)
		out, err := m.Call(context.Background(), []byte("<Probe><Env>"+env+"</Env><Write>"+write+"</Write></Probe>"))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	ro := Sandbox{Dir: dir, Env: []string{"XMLPIPE_WASM_ALLOWED"}}
	if got := probe(ro, "XMLPIPE_WASM_ALLOWED", ""); !strings.Contains(got, "<Value>visible</Value>") {
		t.Fatalf("allowed variable: %s", got)
	}
	if got := probe(ro, "XMLPIPE_WASM_SECRET", ""); !strings.Contains(got, "<Value></Value>") {
		t.Fatalf("variable not on the list: %s", got)
	}
	if got := probe(ro, "", "/data/out.txt"); !strings.Contains(got, "<Wrote>error:") {
		t.Fatalf("write to a read-only dir: %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the read-only dir was written")
	}
	rw := Sandbox{Dir: dir, DirWritable: true}
	if got := probe(rw, "", "/data/out.txt"); !strings.Contains(got, "<Wrote>ok</Wrote>") {
		t.Fatalf("write to a writable dir: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "written by the guest" {
		t.Fatalf("host file: %q %v", b, err)
	}
	if got := probe(rw, "", "/tmp/escape.txt"); !strings.Contains(got, "<Wrote>error:") {
		t.Fatalf("write outside the dir: %s", got)
	}
}

// TestCancelInterruptsTheGuest: a call whose context is cancelled (the
// conversation killed, the organism stopping) interrupts the running guest
// at once — long before its own deadline — and the instance it ran on is
// closed, not put back in the pool.
func TestCancelInterruptsTheGuest(t *testing.T) {
	for _, kind := range []Kind{Reactor, Command} {
		t.Run(string(kind), func(t *testing.T) {
			m := compileGuest(t, "ops", kind, Sandbox{Instances: 1, Timeout: 10 * time.Minute})
			ping := []byte("<Ops><Do>ping</Do></Ops>")
			if out, err := m.Call(context.Background(), ping); err != nil || !strings.Contains(string(out), "pong") {
				t.Fatalf("ping: %s, %v", out, err)
			}
			var pooled *instance
			if kind == Reactor {
				pooled = <-m.idle // the warm instance the next call takes
				m.idle <- pooled
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := m.Call(ctx, []byte("<Ops><Do>spin</Do></Ops>"))
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
			if pooled != nil {
				if !pooled.mod.IsClosed() {
					t.Fatal("the interrupted instance is still open")
				}
				if len(m.idle) != 0 {
					t.Fatal("the interrupted instance went back to the pool")
				}
			}
			if out, err := m.Call(context.Background(), ping); err != nil || !strings.Contains(string(out), "pong") {
				t.Fatalf("after the cancel: %s, %v", out, err)
			}
			if pooled != nil {
				if inst := <-m.idle; inst == pooled {
					t.Fatal("the interrupted instance served again")
				}
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
