package bus

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// soakReadTimeout bounds the wait for one frame under load (a failsafe: a
// lost completion shows up as this timeout).
const soakReadTimeout = time.Minute

// soakClient is one soak client's tally.
type soakClient struct {
	sent, completed, refused int
	rtts                     []time.Duration
	err                      error
	// why is the first refusal's error frame, as it came.
	why string
}

// TestSoakWebSockets (XMLPIPE_SOAK=1, `make soak`): 500 authenticated /ws
// clients (XMLPIPE_SOAK_CLIENTS) each run @greeter conversations one after
// another for 60 s (XMLPIPE_SOAK_DURATION, a Go duration). Every send must
// end in its completion or an error frame, and after the clients disconnect
// the server's goroutines are back to where they were.
func TestSoakWebSockets(t *testing.T) {
	if os.Getenv("XMLPIPE_SOAK") != "1" {
		t.Skip("set XMLPIPE_SOAK=1 (make soak)")
	}
	clients, duration := 500, time.Minute
	if v := os.Getenv("XMLPIPE_SOAK_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("XMLPIPE_SOAK_CLIENTS=%q", v)
		}
		clients = n
	}
	if v := os.Getenv("XMLPIPE_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("XMLPIPE_SOAK_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	f := newFixture(t, func(o *Options) { o.WriteTimeout = 30 * time.Second })
	tokens := make([]string, clients)
	for i := range tokens {
		name := fmt.Sprintf("soak-%d", i)
		tokens[i] = f.loginAs(name, auth.Operator)
	}
	baseline := runtime.NumGoroutine()

	conns := make([]*websocket.Conn, clients)
	for i, tok := range tokens {
		conns[i] = f.dial("/ws", tok)
		if got := readFrame(t, conns[i]); got["type"] != "connected" {
			t.Fatalf("client %d: %v", i, got)
		}
	}
	t.Logf("%d clients connected; running for %v", clients, duration)

	var (
		wg      sync.WaitGroup
		started = make(chan struct{})
		stop    atomic.Bool
		results = make([]soakClient, clients)
	)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-started
			results[i] = runSoakClient(c, i, &stop)
		}()
	}
	begin := time.Now()
	close(started)
	time.AfterFunc(duration, func() { stop.Store(true) })
	wg.Wait()
	elapsed := time.Since(begin)

	var total soakClient
	for i, r := range results {
		if r.err != nil {
			t.Errorf("client %d: %v", i, r.err)
		}
		if r.sent != r.completed+r.refused {
			t.Errorf("client %d: %d sends, %d completions, %d errors: a message was lost", i, r.sent, r.completed, r.refused)
		}
		total.sent += r.sent
		total.completed += r.completed
		total.refused += r.refused
		total.rtts = append(total.rtts, r.rtts...)
		if total.why == "" {
			total.why = r.why
		}
	}
	slices.Sort(total.rtts)
	p := func(q float64) time.Duration {
		if len(total.rtts) == 0 {
			return 0
		}
		return total.rtts[min(len(total.rtts)-1, int(q*float64(len(total.rtts))))]
	}
	t.Logf("%d clients, %v: %d conversations (%d refused), %.0f conversations/s, %.0f messages/s "+
		"(3 envelopes per conversation); round trip send→complete p50 %v, p99 %v, max %v",
		clients, elapsed.Round(time.Millisecond), total.completed, total.refused,
		float64(total.completed)/elapsed.Seconds(), 3*float64(total.completed)/elapsed.Seconds(),
		p(0.5), p(0.99), p(1))
	if total.refused > 0 {
		t.Logf("the first refusal said: %s", total.why)
	}
	if total.completed == 0 {
		t.Fatal("no conversation completed")
	}
	if n := f.srv.router.size(); n != 0 {
		t.Errorf("%d conversations still routed after every one completed", n)
	}

	for _, c := range conns {
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
			time.Now().Add(time.Second))
		c.Close()
	}
	waitGoroutines(t, baseline)
}

// runSoakClient sends @greeter conversations one after another until stop
// and checks each ends in its completion (or an error frame).
func runSoakClient(c *websocket.Conn, i int, stop *atomic.Bool) soakClient {
	var r soakClient
	for n := 0; !stop.Load(); n++ {
		id := strconv.Itoa(n)
		start := time.Now()
		if err := c.WriteJSON(frame{"type": "send", "raw": fmt.Sprintf("@greeter Client%d-%d", i, n), "id": id}); err != nil {
			r.err = fmt.Errorf("send %d: %w", n, err)
			return r
		}
		r.sent++
		var conv string
		for {
			_ = c.SetReadDeadline(time.Now().Add(soakReadTimeout))
			_, data, err := c.ReadMessage()
			if err != nil {
				r.err = fmt.Errorf("conversation %d: %w", n, err)
				return r
			}
			var f struct {
				Type     string `json:"type"`
				ID       string `json:"id"`
				ThreadID string `json:"thread_id"`
			}
			if err := json.Unmarshal(data, &f); err != nil {
				r.err = fmt.Errorf("frame %q: %w", data, err)
				return r
			}
			switch {
			case f.Type == "error" && f.ID == id:
				if r.why == "" {
					r.why = string(data)
				}
				r.refused++
			case f.Type == "sent" && f.ID == id:
				conv = f.ThreadID
				continue
			case f.Type == "complete" && f.ThreadID == conv && conv != "":
				r.completed++
				r.rtts = append(r.rtts, time.Since(start))
			default:
				continue
			}
			break
		}
	}
	return r
}
