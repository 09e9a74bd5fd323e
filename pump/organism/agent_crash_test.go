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
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Environment of the agent crash child (see TestHelperAgentCrashChild).
const (
	envAgentChild = "XMLPIPE_AGENT_CRASH_CHILD"
	envAgentDir   = "XMLPIPE_AGENT_CRASH_DIR"
	envAgentModel = "XMLPIPE_AGENT_CRASH_MODEL"
	// envAgentStop names where the child stops for the kill: "window"
	// (the agent's calls are in its history, their messages not yet
	// journaled), "peer" (the call reached the peer: it is journaled) or
	// "answer" (the peer answered, and the agent's answer is in its
	// history, its message not yet journaled).
	envAgentStop = "XMLPIPE_AGENT_CRASH_STOP"
	// envAgentCalling is the agent's tool_calling (native or xml).
	envAgentCalling = "XMLPIPE_AGENT_CRASH_CALLING"
)

// agentCrashConfig is the organism of the agent crash test: the agent
// waiter calls the peer slow, whose handler is test.Slow, with tool calling
// calling (native or xml).
func agentCrashConfig(t testing.TB, model, calling string) *config.Organism {
	c, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - {name: slow, payload_class: test.SlowQuery, handler: test.Slow, description: Answers slowly}
  - {name: waiter, agent: true, description: waits, prompt: You are waiter., peers: [slow], tool_calling: %s}
`, model, calling)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// slowCatalog is the builtin catalog with the slow peer, whose handler is
// run.
func slowCatalog(run func(ctx context.Context, q *slowQuery) (xmlpipe.Response, error)) *catalog.Catalog {
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.SlowQuery", Type: reflect.TypeFor[slowQuery]()})
	cat.AddHandler(catalog.Handler{Name: "test.Slow", Takes: reflect.TypeFor[slowQuery](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, q *slowQuery, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return run(ctx, q)
			})
		}})
	return cat
}

// windowJournal is the store journal of the agent crash child: the
// stopAt-th record of a message waiter emits (0: none) never reaches the
// store — the child is killed while it waits — once what the store was
// given before is committed and "WINDOW" printed. It is the crash after
// the agent recorded its step (calls, answer) in its history and before the
// pump journaled its messages.
type windowJournal struct {
	storeJournal
	stopAt int32
	seen   *atomic.Int32
	once   *sync.Once
}

// hold stops the calling pump goroutine for good when rs hold waiter's
// stopAt-th message.
func (j windowJournal) hold(rs ...pump.Record) {
	if j.stopAt == 0 {
		return
	}
	for _, r := range rs {
		if r.From == "waiter" && r.Direction == pump.Outbound && r.Kind == pump.RecordMessage && j.seen.Add(1) == j.stopAt {
			j.once.Do(func() {
				go func() {
					if err := j.s.Flush(context.Background()); err != nil {
						fmt.Println("ERR", err)
						os.Exit(3)
					}
					fmt.Println("WINDOW")
				}()
				select {} // until SIGKILL
			})
		}
	}
}

// RecordSeq is storeJournal's, after hold.
func (j windowJournal) RecordSeq(r pump.Record) int64 {
	j.hold(r)
	return j.storeJournal.RecordSeq(r)
}

// Record is storeJournal's, after hold.
func (j windowJournal) Record(r pump.Record) { j.RecordSeq(r) }

// RecordGroup is storeJournal's, after hold.
func (j windowJournal) RecordGroup(rs []pump.Record) []int64 {
	j.hold(rs...)
	return j.storeJournal.RecordGroup(rs)
}

// TestHelperAgentCrashChild is the agent crash child, not a test: it starts
// the agent crash organism on its data directory with the model at
// envAgentModel, asks waiter to "ask slow" and prints "CONV <conversation>"
// once that message is committed. With envAgentStop "window" it stops the
// pump before waiter's call is journaled (windowJournal); with "peer" the
// slow handler prints "PEER" once the call it got is committed and waits;
// with "answer" slow answers, and the pump stops before waiter's answer is
// journaled.
// It runs until it is killed.
func TestHelperAgentCrashChild(t *testing.T) {
	dir, model := os.Getenv(envAgentDir), os.Getenv(envAgentModel)
	if os.Getenv(envAgentChild) == "" || dir == "" {
		t.Skip("agent crash child: run by TestAgentCallsSurviveKill9")
	}
	fail := func(err error) {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		fail(err)
	}
	log := slog.New(slog.DiscardHandler)
	stop := os.Getenv(envAgentStop)
	cat := slowCatalog(func(ctx context.Context, q *slowQuery) (xmlpipe.Response, error) {
		if stop != "peer" {
			return xmlpipe.Respond(&slowAnswer{Text: "done: " + q.Text}), nil
		}
		if err := s.Flush(ctx); err != nil {
			fail(err)
		}
		fmt.Println("PEER")
		select {} // until SIGKILL
	})
	stopAt := map[string]int32{"window": 1, "answer": 2}[stop]
	o, err := New(agentCrashConfig(t, model, os.Getenv(envAgentCalling)), Options{Store: s, Catalog: cat, Logger: log,
		Journal: windowJournal{storeJournal: storeJournal{s: s, log: log}, stopAt: stopAt, seen: &atomic.Int32{},
			once: &sync.Once{}}})
	if err == nil {
		err = o.Start()
	}
	if err != nil {
		fail(err)
	}
	l, _ := o.Pump.Lookup("waiter")
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString("ask slow")
	conv, err := o.Pump.Send(context.Background(), "console", "waiter", v.Interface(), pump.OutletFunc(func(pump.Event) {}))
	if err == nil {
		err = s.Flush(context.Background())
	}
	if err != nil {
		fail(err)
	}
	fmt.Println("CONV", conv)
	select {} // until SIGKILL
}

// runAgentChild runs the agent crash child on dir (its agent's tool calling
// calling), stopping at stop, and
// SIGKILLs it once it printed both its conversation and killAt.
func runAgentChild(t *testing.T, dir, model, calling, stop, killAt string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAgentCrashChild$")
	cmd.Env = append(os.Environ(), envAgentChild+"=1", envAgentDir+"="+dir, envAgentModel+"="+model,
		envAgentStop+"="+stop, envAgentCalling+"="+calling, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
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
	conv, at, killed := false, false, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "CONV "):
			conv = true
		case line == killAt:
			at = true
		case line == "WINDOW", line == "PEER", strings.HasPrefix(line, "PASS"), strings.HasPrefix(line, "ok"), line == "":
		default:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child said %q; stderr:\n%s", line, stderr.String())
		}
		if conv && at && !killed {
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
}

// TestAgentCallsSurviveKill9: kill -9 an organism whose agent's model made a
// tool call — after the agent recorded the call in its history but before
// the pump journaled its message, once the call reached its peer, and
// after the agent recorded its answer but before the pump journaled it —
// and start it again: the conversation goes on, the peer gets the call
// exactly once, the model is not asked again for what it already said and
// the caller gets the answer. So in XML mode, whose model writes its
// message to the peer in its text.
func TestAgentCallsSurviveKill9(t *testing.T) {
	tests := []struct {
		name, calling, stop, killAt string
		// ran and asked are how many times the peer ran and the model was
		// asked before the kill.
		ran, asked int
	}{
		{"calls recorded, not journaled", "native", "window", "WINDOW", 0, 1},
		{"call journaled and running", "native", "peer", "PEER", 0, 1},
		{"answer recorded, not journaled", "native", "answer", "WINDOW", 1, 2},
		{"xml, message recorded, not journaled", "xml", "window", "WINDOW", 0, 1},
		{"xml, answer recorded, not journaled", "xml", "answer", "WINDOW", 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEST_LLM_KEY", "sk-test")
			m := newWireModel(t, config.OpenAI, func(n int, body map[string]any) modelTurn {
				if r := toolMessages(body)["s1"]; r != "" {
					return say("the slow tool said " + r)
				}
				if tc.calling == "xml" {
					for _, msg := range messages(body) {
						if c, _ := msg["content"].(string); strings.HasPrefix(c, "[From slow]\n") {
							return say("the slow tool said " + strings.TrimPrefix(c, "[From slow]\n"))
						}
					}
					return say(`Asking. <SlowQuery><Text>x</Text></SlowQuery>`)
				}
				return call(scriptedCall{"s1", "slow", `{"Text":"x"}`})
			})
			dir := t.TempDir()
			runAgentChild(t, dir, m.URL, tc.calling, tc.stop, tc.killAt)
			if n := len(m.requests()); n != tc.asked {
				t.Fatalf("%d model requests before the kill, want %d", n, tc.asked)
			}

			var ran atomic.Int32
			cat := slowCatalog(func(_ context.Context, q *slowQuery) (xmlpipe.Response, error) {
				ran.Add(1)
				return xmlpipe.Respond(&slowAnswer{Text: "done: " + q.Text}), nil
			})
			log := slog.New(slog.DiscardHandler)
			if testing.Verbose() {
				log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			o, err := New(agentCrashConfig(t, m.URL, tc.calling), Options{DataDir: dir, Catalog: cat, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			replies := make(chan string, 4)
			defer o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
				if e.Kind == pump.EventReply && e.From == "waiter" {
					if a, ok := e.Payload.(*llm.Answer); ok {
						replies <- a.Text
					}
				}
			}))()
			if err := o.Start(); err != nil {
				t.Fatal(err)
			}
			stopped := false
			defer func() {
				if !stopped {
					shutdown(t, o)
				}
			}()
			select {
			case got := <-replies:
				if want := `the slow tool said {"Text":"done: x"}`; got != want {
					t.Fatalf("answer after the restart %q, want %q", got, want)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the turn did not complete after the restart (model requests: %d, slow ran %d times)",
					len(m.requests()), ran.Load())
			}
			shutdown(t, o) // drains what is in flight: a second call would run
			stopped = true
			if n := ran.Load(); n != 1-int32(tc.ran) {
				t.Errorf("slow ran %d times after the restart, want %d", n, 1-tc.ran)
			}
			if n := len(m.requests()); n != 2 {
				t.Errorf("%d model requests in all, want 2 (the call was not asked for again)", n)
			}
		})
	}
}
