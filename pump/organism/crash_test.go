package organism

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Environment of the crash child: the test binary re-executed with
// envCrashChild set runs TestHelperCrashChild on the data directory
// envCrashDir.
const (
	envCrashChild = "XMLPIPE_ORGANISM_CRASH_CHILD"
	envCrashDir   = "XMLPIPE_ORGANISM_CRASH_DIR"
)

// crashSenders is how many goroutines of the child start conversations.
const crashSenders = 4

// slowShout is the child's shouter: the hello-world shout after a little
// work, so the kill finds conversations whose inbound message is committed
// but whose shout is not.
func slowShout(ctx context.Context, p *hello.GreetingResponse, md xmlpipe.Metadata) (xmlpipe.Response, error) {
	select {
	case <-time.After(30 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return hello.Shout(ctx, p, md)
}

// TestHelperCrashChild is the crash child, not a test: it runs only when the
// crash test re-executes the binary. It starts the durable hello-world
// organism (shouter slowed down) on its data directory and starts
// conversations from crashSenders goroutines forever, printing
// "CONV <conversation> <name>" once the conversation's inbound message is
// committed (a Flush after ingress) and "SHOUT <text>" whenever
// response-handler prints, until it is killed.
func TestHelperCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if os.Getenv(envCrashChild) == "" || dir == "" {
		t.Skip("crash child: run by TestCrashKill9")
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	cat := catalog.Builtin()
	cat.AddHandler(catalog.Handler{Name: "test.SlowShout", Takes: reflect.TypeFor[hello.GreetingResponse](),
		New: func(catalog.Env) xmlpipe.Handler { return xmlpipe.Typed(slowShout) }})
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		say("ERR %v", err)
		os.Exit(3)
	}
	for i := range cfg.Listeners {
		if cfg.Listeners[i].Name == "shouter" {
			cfg.Listeners[i].Handler = "test.SlowShout"
		}
	}
	o, err := New(cfg, Options{DataDir: dir, Catalog: cat, Logger: slog.New(slog.DiscardHandler),
		Env: catalog.Env{Print: func(_, _, text string) { say("SHOUT %s", text) }}})
	if err == nil {
		err = o.Start()
	}
	if err != nil {
		say("ERR %v", err)
		os.Exit(3)
	}
	for g := range crashSenders {
		go func() {
			for i := 0; ; i++ {
				name := fmt.Sprintf("p%dg%dn%d", os.Getpid(), g, i)
				conv, err := o.Pump.Send(context.Background(), "console", "greeter", &hello.Greeting{Name: name}, nil)
				if err == nil {
					err = o.Store().Flush(context.Background())
				}
				if err != nil {
					say("ERR %v", err)
					os.Exit(3)
				}
				say("CONV %s %s", conv, name)
			}
		}()
	}
	select {} // until SIGKILL
}

// crashRun is what the parent learned from one child before and after the
// kill.
type crashRun struct {
	// committed maps each conversation the child reported committed to the
	// name it greeted.
	committed map[string]string
	// shouted holds the texts response-handler printed in the child.
	shouted map[string]bool
}

// shoutOf is what response-handler prints for a greeting of name.
func shoutOf(name string) string { return "HELLO, " + strings.ToUpper(name) + "!" }

// runCrashChild starts the crash child on dir, SIGKILLs it after it reported
// killAfter committed conversations, and returns everything it printed
// (lines written before the kill are still read from the pipe).
func runCrashChild(t *testing.T, dir string, killAfter int) crashRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrashChild$")
	cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashDir+"="+dir,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()
	run := crashRun{committed: map[string]string{}, shouted: map[string]bool{}}
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var a, b string
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "SHOUT "):
			run.shouted[strings.TrimPrefix(line, "SHOUT ")] = true
		case strings.HasPrefix(line, "CONV "):
			if _, err := fmt.Sscanf(line, "CONV %s %s", &a, &b); err != nil {
				t.Fatalf("child said %q", line)
			}
			run.committed[a] = b
		case strings.HasPrefix(line, "PASS"), strings.HasPrefix(line, "ok"), line == "":
		default:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child said %q; stderr:\n%s", line, stderr.String())
		}
		if !killed && len(run.committed) >= killAfter {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		}
	}
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended after %d conversations: %v; stderr:\n%s", len(run.committed), err, stderr.String())
	}
	return run
}

// TestCrashKill9: kill -9 an organism mid-stream, restart it on the same data
// directory: the journal verifies, every conversation whose inbound message
// was committed has that entry exactly once, and every one of them finishes
// (its shout is journaled and printed, before the kill or after recovery).
// XMLPIPE_SOAK=1 runs more kill/restart cycles.
func TestCrashKill9(t *testing.T) {
	cycles, killAfter := 2, 60
	if os.Getenv("XMLPIPE_SOAK") != "" {
		cycles, killAfter = 10, 200
	}
	dir := t.TempDir()
	seen := map[string]bool{}
	restartShouts := 0
	for cycle := range cycles {
		run := runCrashChild(t, dir, killAfter)
		for conv := range run.committed {
			if seen[conv] {
				t.Fatalf("cycle %d: conversation %s reported twice", cycle, conv)
			}
			seen[conv] = true
		}

		o, out := startDurableHello(t, dir, nil)
		if err := o.WaitRecovered(context.Background()); err != nil {
			t.Fatalf("cycle %d: recovery: %v", cycle, err)
		}
		shutdown(t, o) // drains every recovered conversation
		restart := map[string]bool{}
		for _, line := range out.all() {
			restart[strings.TrimPrefix(line, "[shouter] ")] = true
		}
		checkAfterCrash(t, dir, run.committed)
		recovered := 0
		for conv, name := range run.committed {
			switch shout := shoutOf(name); {
			case run.shouted[shout]:
			case restart[shout]:
				recovered++
			default:
				t.Errorf("conversation %s (%s) was never shouted, before the kill or after the restart", conv, name)
			}
		}
		t.Logf("cycle %d: %d conversations committed before the kill, %d of them finished after the restart; "+
			"the restart shouted %d times", cycle, len(run.committed), recovered, len(restart))
		restartShouts += len(restart)
	}
	if restartShouts == 0 {
		t.Error("the restarts shouted nothing: the kills left nothing to recover, recovery was not exercised")
	}
}

// checkAfterCrash opens the store read-only and checks the journal after a
// kill and a clean restart: Verify passes, seqs run 1..n without a gap or a
// duplicate, nothing is left undelivered, and every committed conversation
// has exactly one inbound entry and exactly one journaled shout.
func checkAfterCrash(t *testing.T, dir string, committed map[string]string) {
	t.Helper()
	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(context.Background(), nil)
	if err != nil || !rep.OK() {
		t.Fatalf("Verify after the crash = %v, %v", rep.Faults, err)
	}
	all, err := r.After(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("journal row %d has seq %d: a seq is missing or duplicated", i, e.Seq)
		}
	}
	und, err := r.Undelivered()
	if err != nil || len(und) != 0 {
		t.Fatalf("after recovery and a clean shutdown %d messages are undelivered (%v)", len(und), err)
	}
	for conv, name := range committed {
		entries, err := r.Conversation(conv)
		if err != nil {
			t.Fatal(err)
		}
		inbound, shouts := 0, 0
		for _, e := range entries {
			switch {
			case e.Direction == store.Inbound && e.Kind == store.Message:
				inbound++
			case e.From == "shouter" && e.To == "response-handler" && e.Kind == store.Message:
				shouts++
			}
		}
		if inbound != 1 || shouts != 1 {
			t.Errorf("conversation %s (%s): %d inbound entries and %d shouts journaled, want 1 and 1",
				conv, name, inbound, shouts)
			for _, e := range entries {
				t.Logf("  journal seq %d: %s %s %s→%s listener=%s thread=%s", e.Seq, e.Direction, e.Kind, e.From, e.To,
					e.Listener, e.Thread)
			}
		}
	}
}
