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
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// FanTask asks the fanout listener for its turn of turnSize messages.
type FanTask struct{ Text string }

// FanItem is one of the messages of the fanout's turn.
type FanItem struct{ Text string }

// turnSize is how many messages the fanout listener's one turn sends.
const turnSize = 3000

// Environment of the turn crash child (see TestHelperTurnCrashChild).
const (
	envTurnChild = "XMLPIPE_TURN_CRASH_CHILD"
	envTurnDir   = "XMLPIPE_TURN_CRASH_DIR"
	// envTurnHold makes the fanout handler wait after printing TURN, so
	// the kill finds it running.
	envTurnHold = "XMLPIPE_TURN_CRASH_HOLD"
)

// turnOrganism is the organism of the turn crash test: fanout answers a
// FanTask with one raw reply of turnSize FanItems, each to sink.
const turnOrganism = `organism: {name: turns}
listeners:
  - name: fanout
    payload_class: test.FanTask
    handler: test.FanOut
    description: Sends one turn of many messages
    max_messages_per_turn: 3000
  - name: sink
    payload_class: test.FanItem
    handler: test.FanSink
    description: Takes the messages
`

// startTurnOrganism starts the turn organism on dir; turns counts the
// fanout handler's calls, and onTurn (when set) runs in each.
func startTurnOrganism(dir string, log *slog.Logger, turns *atomic.Int64, onTurn func()) (*Organism, error) {
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.FanTask", Type: reflect.TypeFor[FanTask]()})
	cat.AddPayload(catalog.Payload{Name: "test.FanItem", Type: reflect.TypeFor[FanItem]()})
	cat.AddHandler(catalog.Handler{Name: "test.FanOut", Takes: reflect.TypeFor[FanTask](), New: func(catalog.Env) xmlpipe.Handler {
		return xmlpipe.Typed(func(_ context.Context, p *FanTask, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
			turns.Add(1)
			if onTurn != nil {
				onTurn()
			}
			var b strings.Builder
			b.WriteString("Here they are.\n")
			for i := range turnSize {
				fmt.Fprintf(&b, "<FanItem><Text>%s %d</Text></FanItem>\n", p.Text, i)
			}
			return xmlpipe.Raw([]byte(b.String())), nil
		})
	}})
	cat.AddHandler(catalog.Handler{Name: "test.FanSink", Takes: reflect.TypeFor[FanItem](), New: func(catalog.Env) xmlpipe.Handler {
		return xmlpipe.Typed(func(context.Context, *FanItem, xmlpipe.Metadata) (xmlpipe.Response, error) { return nil, nil })
	}})
	cfg, err := config.Parse("organism.yaml", []byte(turnOrganism))
	if err != nil {
		return nil, err
	}
	o, err := New(cfg, Options{DataDir: dir, Catalog: cat, Logger: log})
	if err != nil {
		return nil, err
	}
	return o, o.Start()
}

// TestHelperTurnCrashChild is the turn crash child, not a test: it starts the
// turn organism on its data directory, sends fanout one FanTask and prints
// "CONV <conversation>" once it is committed, "TURN" when the fanout
// handler runs (then, with envTurnHold set, it waits for the kill) and
// "FIRST" when the first of its messages reaches a
// subscriber (events wait for the journal: that message is committed). It
// runs until it is killed.
func TestHelperTurnCrashChild(t *testing.T) {
	dir := os.Getenv(envTurnDir)
	if os.Getenv(envTurnChild) == "" || dir == "" {
		t.Skip("turn crash child: run by TestTurnCrashAllOrNothing")
	}
	var turns atomic.Int64
	hold := os.Getenv(envTurnHold) != ""
	o, err := startTurnOrganism(dir, slog.New(slog.DiscardHandler), &turns, func() {
		fmt.Println("TURN")
		if hold {
			time.Sleep(time.Minute)
		}
	})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	var first atomic.Bool
	o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "sink" && first.CompareAndSwap(false, true) {
			fmt.Println("FIRST")
		}
	}))
	conv, err := o.Pump.Send(context.Background(), "console", "fanout", &FanTask{Text: "item"}, nil)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	fmt.Println("CONV", conv)
	select {} // until SIGKILL
}

// runTurnChild starts the turn crash child on dir (holding in the handler
// when hold is set) and SIGKILLs it delay after it printed killAt; it
// returns the conversation it reported.
func runTurnChild(t *testing.T, dir, killAt string, hold bool, delay time.Duration) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTurnCrashChild$")
	cmd.Env = append(os.Environ(), envTurnChild+"=1", envTurnDir+"="+dir,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if hold {
		cmd.Env = append(cmd.Env, envTurnHold+"=1")
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()
	conv, killed := "", false
	var seen time.Time // when killAt was printed
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "CONV "):
			conv = strings.TrimPrefix(line, "CONV ")
		case line == "TURN", line == "FIRST", strings.HasPrefix(line, "PASS"), strings.HasPrefix(line, "ok"), line == "":
		default:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child said %q; stderr:\n%s", line, stderr.String())
		}
		if line == killAt && seen.IsZero() {
			seen = time.Now()
		}
		// The handler may run before the message's acknowledgement (CONV)
		// is printed: the kill waits for both.
		if !killed && !seen.IsZero() && conv != "" {
			time.Sleep(time.Until(seen.Add(delay)))    // where in the turn the kill lands
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		}
	}
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before %s: %v; stderr:\n%s", killAt, err, stderr.String())
	}
	return conv
}

// turnOutputs counts, in conversation conv of the journal in dir, the
// messages fanout sent, and fails on a duplicate.
func turnOutputs(t *testing.T, dir, conv string) int {
	t.Helper()
	r, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	entries, err := r.Conversation(conv)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.From != "fanout" || e.Kind != store.Message {
			continue
		}
		body := string(e.Bytes)
		if seen[body] {
			t.Fatalf("journal seq %d repeats a message of the turn", e.Seq)
		}
		seen[body] = true
	}
	return len(seen)
}

// TestTurnCrashAllOrNothing: kill -9 an organism while one handler call's
// turnSize outputs are on their way: after the kill the journal holds all
// of the turn or none of it; after a restart, a turn found whole is not run
// again and a turn found missing is run again, and either way every output
// is journaled exactly once, the journal verifies and nothing is left
// undelivered. The kill comes while the handler runs (nothing of the turn
// can be journaled), a little after it returned (while its outputs pass the
// ingress stages or are committed: either outcome), and once the first
// output reached a subscriber (it is committed: with per-message commits,
// only part of the turn would be).
func TestTurnCrashAllOrNothing(t *testing.T) {
	const none, any, whole = 0, -1, turnSize
	tests := []struct {
		name   string
		killAt string
		hold   bool
		delay  time.Duration
		want   int // what the kill must leave: none, whole or any of the two
	}{
		{"in the handler", "TURN", true, 0, none},
		{"after the handler", "TURN", false, 150 * time.Millisecond, any},
		{"once an output is committed", "FIRST", false, 0, whole},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conv := runTurnChild(t, dir, tc.killAt, tc.hold, tc.delay)
			if conv == "" {
				t.Fatal("the child was killed before its message was committed")
			}
			found := turnOutputs(t, dir, conv)
			if found != 0 && found != turnSize {
				t.Fatalf("after kill -9 the journal holds %d of the turn's %d messages", found, turnSize)
			}
			if tc.want != any && found != tc.want {
				t.Fatalf("after kill -9 %s the journal holds %d of the turn's messages, want %d", tc.name, found, tc.want)
			}

			var turns atomic.Int64
			o, err := startTurnOrganism(dir, slog.New(slog.DiscardHandler), &turns, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := o.WaitRecovered(ctx); err != nil {
				t.Fatalf("recovery: %v", err)
			}
			for o.Pump.InFlight() > 0 {
				if ctx.Err() != nil {
					t.Fatalf("%d messages still in flight", o.Pump.InFlight())
				}
				time.Sleep(10 * time.Millisecond)
			}
			shutdown(t, o)
			if rerun := found == 0; (turns.Load() == 1) != rerun || turns.Load() > 1 {
				t.Fatalf("the handler ran %d times after the restart, with %d of the turn journaled", turns.Load(), found)
			}
			if n := turnOutputs(t, dir, conv); n != turnSize {
				t.Fatalf("after the restart the journal holds %d of the turn's %d messages", n, turnSize)
			}
			r, err := store.OpenReadOnly(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if rep, err := r.Verify(context.Background(), nil); err != nil || !rep.OK() {
				t.Fatalf("verify: %v, %v", rep.Faults, err)
			}
			if und, err := r.Undelivered(); err != nil || len(und) != 0 {
				t.Fatalf("%d messages undelivered after the restart (%v)", len(und), err)
			}
			t.Logf("kill %s: %d of %d journaled after the kill; the handler ran %d time(s) after the restart",
				tc.name, found, turnSize, turns.Load())
		})
	}
}
