package organism_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// longSlow is the payload of the slow tool of the cancel tests.
type longSlow struct {
	XMLName xml.Name `xml:"LongSlow"`
	Text    string
}

// longSlowAnswer is what the slow tool answers (never, in these tests).
type longSlowAnswer struct {
	XMLName xml.Name `xml:"LongSlowAnswer"`
	Text    string
}

// startSlowConv starts a durable organism whose mathbot may also call
// slow, a tool that runs until it is stopped, telling started when it
// begins.
func startSlowConv(t *testing.T, url, dir string, started chan<- struct{}) *organism.Organism {
	t.Helper()
	return startToolConv(t, url, dir, func(ctx context.Context) (xmlpipe.Response, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
}

// startToolConv starts a durable organism whose mathbot may also call
// slow, a tool that runs run.
func startToolConv(t testing.TB, url, dir string, run func(ctx context.Context) (xmlpipe.Response, error)) *organism.Organism {
	t.Helper()
	cat := catalog.Builtin()
	cat.AddPayload(catalog.Payload{Name: "test.LongSlow", Type: reflect.TypeFor[longSlow]()})
	cat.AddHandler(catalog.Handler{Name: "test.LongSlowRun", Takes: reflect.TypeFor[longSlow](),
		New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.Typed(func(ctx context.Context, _ *longSlow, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				return run(ctx)
			})
		}})
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: longconv}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: %s, model: test-model}
listeners:
  - {name: slow, payload_class: test.LongSlow, handler: test.LongSlowRun, description: Works slowly}
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tools: [calculate]
    peers: [slow]
`, url)))
	if err != nil {
		t.Fatal(err)
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler), DataDir: dir, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestLongConversationCancelledCall: in the middle of a long conversation
// the user cancels a turn while its tool call runs; the next turn — in the
// same process, or after a clean restart — sends the model the whole
// conversation once, the cancelled call closed by a result saying so (no
// call left without one, which providers refuse), the note that the user
// cancelled, then the new message; the turns after go on as usual.
func TestLongConversationCancelledCall(t *testing.T) {
	const turns, cancelAt = 14, 7
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			m := newLongModel(t, slowAt(cancelAt))
			dir := t.TempDir()
			started := make(chan struct{}, 1)
			o := startSlowConv(t, m.URL, dir, started)
			defer func() { _ = o.Shutdown(context.Background()) }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			conv := ""
			for k := 1; k <= turns; k++ {
				if k == cancelAt+1 && restart {
					if err := o.Shutdown(ctx); err != nil {
						t.Fatal(err)
					}
					o = startSlowConv(t, m.URL, dir, started)
				}
				first := m.Count()
				if k == cancelAt {
					done := make(chan error, 1)
					go func() {
						_, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
						done <- err
					}()
					select {
					case <-started:
					case <-ctx.Done():
						t.Fatal("the slow call never started")
					}
					if _, err := o.Pump.Cancel(conv); err != nil {
						t.Fatalf("cancel: %v", err)
					}
					if err := <-done; !errors.Is(err, pump.ErrCancelled) {
						t.Fatalf("the cancelled turn: %v, want ErrCancelled", err)
					}
					continue
				}
				ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
				if err != nil {
					t.Fatalf("turn %d: %v", k, err)
				}
				conv = ev.Conversation
				var want []string
				for _, line := range wantTranscript(k) {
					want = append(want, line)
					if k > cancelAt && line == "U "+turnText(cancelAt) {
						want = append(want, "C s7 slow", "T s7 Error: Cancelled while it ran: the user cancelled the answer.",
							"U [the user cancelled the previous answer]")
					}
				}
				if k > cancelAt {
					// wantTranscript has turn 7 answered: it was not.
					want = slicesDelete(want, "A answer 7")
				}
				if d := cmp.Diff(want, transcript(m.Request(t, first))); d != "" {
					t.Fatalf("turn %d: what the model is sent (-want +got):\n%s", k, d)
				}
			}
		})
	}
}

// slicesDelete returns s without the elements equal to v.
func slicesDelete(s []string, v string) []string {
	out := s[:0]
	for _, e := range s {
		if e != v {
			out = append(out, e)
		}
	}
	return out
}

// TestLongConversationCancelledModelCall: the user cancels a turn while the
// model is still answering it; the next turn — in the same process, or
// after a clean restart — sends the model the whole conversation once,
// the cancelled turn's message followed by the note that the user
// cancelled (nothing of the reply that never completed), then the new
// message.
func TestLongConversationCancelledModelCall(t *testing.T) {
	const turns, cancelAt = 12, 7
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			inCall, release := make(chan struct{}), make(chan struct{})
			var asked atomic.Int32
			m := newLongModel(t, func(msgs []llmtest.Message) []string {
				if lastTurn(msgs) == cancelAt && asked.Add(1) == 1 {
					close(inCall)
					<-release // the cancel aborts this call meanwhile
					return []string{"never read"}
				}
				return longReply(msgs)
			})
			dir := t.TempDir()
			o := startLongConv(t, m.URL, dir, "")
			defer func() { _ = o.Shutdown(context.Background()) }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			conv := ""
			for k := 1; k <= turns; k++ {
				if k == cancelAt+1 && restart {
					if err := o.Shutdown(ctx); err != nil {
						t.Fatal(err)
					}
					o = startLongConv(t, m.URL, dir, "")
				}
				first := m.Count()
				if k == cancelAt {
					done := make(chan error, 1)
					go func() {
						_, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
						done <- err
					}()
					<-inCall
					if _, err := o.Pump.Cancel(conv); err != nil {
						t.Fatalf("cancel: %v", err)
					}
					close(release)
					if err := <-done; !errors.Is(err, pump.ErrCancelled) {
						t.Fatalf("the cancelled turn: %v, want ErrCancelled", err)
					}
					continue
				}
				ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
				if err != nil {
					t.Fatalf("turn %d: %v", k, err)
				}
				conv = ev.Conversation
				var want []string
				for _, line := range wantTranscript(k) {
					if k > cancelAt && line == fmt.Sprintf("A answer %d", cancelAt) {
						line = "U [the user cancelled the previous answer]"
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
