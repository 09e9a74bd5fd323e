package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// hostileBodyBytes is how much a hostile model server sends: far past
// maxReplyBytes.
const hostileBodyBytes = 50 << 20

// writeUntil writes head, then chunk again and again until n bytes went or
// the client stopped reading, then tail. It reports on whole whether
// everything was written.
func writeUntil(w http.ResponseWriter, head, chunk, tail string, n int, whole *atomic.Bool) {
	if _, err := fmt.Fprint(w, head); err != nil {
		return
	}
	b := []byte(chunk)
	for sent := len(head); sent < n; sent += len(b) {
		if _, err := w.Write(b); err != nil {
			return
		}
	}
	if _, err := fmt.Fprint(w, tail); err == nil {
		whole.Store(true)
	}
}

// deltaEvent is one streamed piece of text in provider p's protocol.
func deltaEvent(p config.Provider, text string) string {
	switch p {
	case config.Anthropic:
		return `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + text + "\"}}\n\n"
	case config.Ollama:
		return `{"message":{"role":"assistant","content":"` + text + "\"},\"done\":false}\n"
	}
	return `data: {"choices":[{"index":0,"delta":{"content":"` + text + "\"}}]}\n\n"
}

// TestHostileModelServer: a model server that answers with 50 MB (one JSON
// document, a stream of small pieces, one endless stream line) or stalls
// mid-stream gets the call a clear error, and the client never holds more
// than the reply cap of it: it hangs up before the server is done.
func TestHostileModelServer(t *testing.T) {
	piece := strings.Repeat("a", 32<<10)
	for _, wp := range wireProviders {
		var whole atomic.Bool
		half := deltaEvent(wp.p, "lo")
		half = half[:len(half)/2]
		tests := []struct {
			name   string
			reply  http.HandlerFunc
			stream bool
			want   error
			says   string
		}{
			{"50 MB JSON", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				writeUntil(w, `{"choices":[{"message":{"content":"`, piece, `"}}]}`, hostileBodyBytes, &whole)
			}, false, ErrMalformed, fmt.Sprintf("reply larger than %d bytes", maxReplyBytes)},
			{"50 MB of pieces", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", wp.stream)
				writeUntil(w, "", deltaEvent(wp.p, piece), "", hostileBodyBytes, &whole)
			}, true, ErrMalformed, fmt.Sprintf("reply larger than %d bytes", maxReplyBytes)},
			{"endless line", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", wp.stream)
				writeUntil(w, "data: ", piece, "\n\n", hostileBodyBytes, &whole)
			}, true, ErrMalformed, fmt.Sprintf("a stream line longer than %d bytes", maxLineBytes)},
			{"stalls mid-stream", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", wp.stream)
				fmt.Fprint(w, deltaEvent(wp.p, "Hel"))
				fmt.Fprint(w, half) // half an event, then nothing
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}, true, nil, ""},
		}
		for _, tc := range tests {
			t.Run(string(wp.p)+"/"+tc.name, func(t *testing.T) {
				whole.Store(false)
				f := newFake(t, tc.reply)
				// The stall ends at the backend's timeout; the others must end
				// at the reply cap, however slowly a loaded -race run reads
				// 8 MiB of pieces (over 3 s at times), before the test's minute.
				timeout := 45 * time.Second
				if tc.says == "" {
					timeout = 3 * time.Second
				}
				b := backendFor(t, wp.p, "b", f, func(c *config.Backend) { c.Timeout = config.Duration(timeout) })
				req := Request{Messages: testMessages}
				var streamed int
				if tc.stream {
					req.OnDelta = func(d Delta) { streamed += len(d.Text) }
				}
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := b.do(ctx, req)
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				if err == nil {
					t.Fatal("a hostile reply was taken")
				}
				if tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.says)
				}
				if ctx.Err() != nil {
					t.Fatalf("the call ended only with the test's deadline: %v", err)
				}
				if whole.Load() {
					t.Error("the client read all 50 MB")
				}
				t.Logf("%d MiB allocated meanwhile", (after.TotalAlloc-before.TotalAlloc)>>20)
				if streamed > maxReplyBytes {
					t.Errorf("%d bytes streamed on, more than the reply cap", streamed)
				}
				t.Logf("%v", err)
			})
		}
	}
}
