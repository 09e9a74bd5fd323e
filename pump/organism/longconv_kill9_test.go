package organism_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Environment of the long-conversation crash child.
const (
	envLongChild = "XMLPIPE_LONGCONV_CHILD"
	envLongDir   = "XMLPIPE_LONGCONV_DIR"
	envLongModel = "XMLPIPE_LONGCONV_MODEL"
	envLongStop  = "XMLPIPE_LONGCONV_STOP" // "between" or "call"
	envLongAt    = "XMLPIPE_LONGCONV_AT"
)

// slowAt is the model of the crash and cancel tests: longReply, but at
// turn at it calls slow (id "s<at>") first.
func slowAt(at int) func(msgs []llmtest.Message) []string {
	return func(msgs []llmtest.Message) []string {
		if k := lastTurn(msgs); k == at && msgs[len(msgs)-1].Role == "user" {
			return []string{llmtest.ToolCall(fmt.Sprintf("s%d", k), "slow", `{"Text":"x"}`)}
		}
		return longReply(msgs)
	}
}

// TestHelperLongConvChild is the crash child, not a test: it runs only when
// TestLongConversationKill9 re-executes the binary. It holds a conversation
// with mathbot on its durable data directory, printing "TURN k <conv>" once
// turn k's answer is in and committed, and "KILL" where it is to be killed:
// after turn at-1 (stop "between"), or once turn at's call of slow runs and
// is committed (stop "call"). Then it waits for SIGKILL.
func TestHelperLongConvChild(t *testing.T) {
	dir := os.Getenv(envLongDir)
	if os.Getenv(envLongChild) == "" || dir == "" {
		t.Skip("crash child: run by TestLongConversationKill9")
	}
	fail := func(err error) {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	at, _ := strconv.Atoi(os.Getenv(envLongAt))
	stop := os.Getenv(envLongStop)
	var o *organism.Organism
	running := make(chan struct{}, 1)
	o = startToolConv(t, os.Getenv(envLongModel), dir, func(ctx context.Context) (xmlpipe.Response, error) {
		running <- struct{}{}
		select {} // until SIGKILL
	})
	ctx := context.Background()
	conv := ""
	for k := 1; k < at; k++ {
		ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
		if err == nil {
			err = o.Store().Flush(ctx)
		}
		if err != nil {
			fail(err)
		}
		conv = ev.Conversation
		fmt.Println("TURN", k, conv)
	}
	if stop == "call" {
		go func() { _, _ = o.ContinueText(ctx, conv, "mathbot", turnText(at)) }()
		<-running
		if err := o.Store().Flush(ctx); err != nil {
			fail(err)
		}
	}
	fmt.Println("KILL")
	select {} // until SIGKILL
}

// runLongChild runs the crash child and SIGKILLs it when it says KILL; it
// returns the conversation's id.
func runLongChild(t *testing.T, dir, model, stop string, at int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLongConvChild$")
	cmd.Env = append(os.Environ(), envLongChild+"=1", envLongDir+"="+dir, envLongModel+"="+model,
		envLongStop+"="+stop, envLongAt+"="+strconv.Itoa(at),
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
	watchdog := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()
	conv, killed := "", false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "TURN "):
			f := strings.Fields(line)
			conv = f[len(f)-1]
		case line == "KILL":
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		case strings.HasPrefix(line, "PASS"), strings.HasPrefix(line, "ok"), line == "":
		default:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child said %q; stderr:\n%s", line, stderr.String())
		}
	}
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	if !killed || conv == "" {
		t.Fatalf("child ended before KILL: %v; stderr:\n%s", err, stderr.String())
	}
	return conv
}

// TestLongConversationKill9: kill -9 an organism in the middle of a long
// conversation — between two turns, or while a turn's tool call runs —
// and start it again on its data directory: the turn in flight completes
// (its call made once more, the model not asked again for it), and every
// turn after sends the model the same conversation as without the crash:
// every earlier turn once, in order, each call with its result.
func TestLongConversationKill9(t *testing.T) {
	const at, turns = 12, 16
	for _, stop := range []string{"between", "call"} {
		t.Run(stop, func(t *testing.T) {
			m := newLongModel(t, slowAt(at))
			dir := t.TempDir()
			conv := runLongChild(t, dir, m.URL, stop, at)

			var ran atomic.Int32
			replies := make(chan string, 4)
			o := startToolConv(t, m.URL, dir, func(context.Context) (xmlpipe.Response, error) {
				ran.Add(1)
				return xmlpipe.Respond(&longSlowAnswer{Text: "done"}), nil
			})
			defer func() { _ = o.Shutdown(context.Background()) }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			from := at
			if stop == "call" {
				// The turn in flight completes after the restart.
				defer o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
					if e.Kind == pump.EventReply && e.From == "mathbot" {
						text, _ := organism.PayloadText(e.Payload)
						replies <- text
					}
				}))()
				select {
				case got := <-replies:
					if want := fmt.Sprintf(`answer %d is {"Text":"done"}`, at); got != want {
						t.Fatalf("the turn in flight answered %q after the restart, want %q", got, want)
					}
				case <-ctx.Done():
					t.Fatalf("the turn in flight never completed after the restart (%d model requests)", m.Count())
				}
				if n := ran.Load(); n != 1 {
					t.Errorf("slow ran %d times after the restart, want 1", n)
				}
				from = at + 1
			}
			for k := from; k <= turns; k++ {
				first := m.Count()
				ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
				if err != nil {
					t.Fatalf("turn %d: %v", k, err)
				}
				if ev.Conversation != conv {
					t.Fatalf("turn %d went on conversation %s, want %s", k, ev.Conversation, conv)
				}
				var want []string
				for _, line := range wantTranscript(k) {
					if k > at && line == fmt.Sprintf("A answer %d", at) {
						id := fmt.Sprintf("s%d", at)
						line = "C " + id + " slow"
						want = append(want, line, "T "+id+` {"Text":"done"}`, fmt.Sprintf(`A answer %d is {"Text":"done"}`, at))
						continue
					}
					want = append(want, line)
				}
				if d := cmp.Diff(want, transcript(m.Request(t, first))); d != "" {
					t.Fatalf("turn %d: what the model is sent (-want +got):\n%s", k, d)
				}
			}
		})
	}
}
