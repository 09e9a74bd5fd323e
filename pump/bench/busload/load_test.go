package busload

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeBus is a /ws server that acknowledges every send and then behaves
// as its mode says: "answer" (the conversation's events: those subscribed
// to), "silent" (never answers) or "drop" (closes the socket instead of
// answering) — or, in mode "refuse", answers every send with an error frame. It remembers the last subscription asked for.
type fakeBus struct {
	mode    string
	sockets atomic.Int64

	mu         sync.Mutex
	subscribed []string
}

func (f *fakeBus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	n := f.sockets.Add(1)
	_ = ws.WriteJSON(map[string]any{"type": "connected", "username": "u", "role": "operator"})
	wants := func(string) bool { return true }
	for {
		var req struct {
			Type   string   `json:"type"`
			ID     int64    `json:"id"`
			Events []string `json:"events"`
		}
		if err := ws.ReadJSON(&req); err != nil {
			return
		}
		if req.Type == "subscribe" {
			f.mu.Lock()
			f.subscribed = req.Events
			f.mu.Unlock()
			events := req.Events
			wants = func(typ string) bool { return slices.Contains(events, typ) }
			_ = ws.WriteJSON(map[string]any{"type": "subscribed", "events": req.Events})
			continue
		}
		if f.mode == "refuse" {
			_ = ws.WriteJSON(map[string]any{"type": "error", "id": req.ID, "error": "Unknown target: x", "code": "unknown_target"})
			continue
		}
		conv := fmt.Sprintf("conv-%d-%d", n, req.ID)
		_ = ws.WriteJSON(map[string]any{"type": "sent", "id": req.ID, "thread_id": conv, "target": "greeter"})
		switch f.mode {
		case "answer":
			for _, ev := range []map[string]any{
				{"type": "message", "thread_id": conv, "payload": "<x/>"},
				{"type": "output", "thread_id": conv, "from": "response-handler", "text": DefaultReply},
				{"type": "complete", "thread_id": conv},
			} {
				if wants(ev["type"].(string)) {
					_ = ws.WriteJSON(ev)
				}
			}
		case "drop":
			return
		}
	}
}

// TestDriveCounts checks the tally against servers whose behaviour is
// known: every request answered, none answered (lost), sockets dropped
// (unanswered, reconnected).
func TestDriveCounts(t *testing.T) {
	tests := []struct {
		mode      string
		reconnect bool
		allEvents bool
		rate      float64 // 0: closed loop
		check     func(t *testing.T, tl Tally)
	}{
		{"answer", false, false, 0, answered},
		{"answer", false, true, 0, answered},
		{"answer", false, false, 100, answered},
		{"refuse", false, false, 0, func(t *testing.T, tl Tally) {
			// closed loop: a refusal answers the request, the next follows
			if tl.Sent < 4 || tl.Refused != tl.Sent || tl.Acked != 0 || tl.Lost != 0 || tl.Errors != 0 {
				t.Errorf("want every send refused, none lost: %+v", brief(tl))
			}
		}},
		{"silent", false, false, 0, func(t *testing.T, tl Tally) {
			// closed loop: one request per client, acknowledged, never answered
			if tl.Sent != 2 || tl.Acked != 2 || tl.Replies != 0 || tl.Lost != 2 {
				t.Errorf("want 2 sent, acked and lost: %+v", brief(tl))
			}
		}},
		{"silent", false, false, 100, func(t *testing.T, tl Tally) {
			// open loop: every request acknowledged, never answered
			if tl.Sent < 2 || tl.Acked != tl.Sent || tl.Replies != 0 || tl.Lost != tl.Sent {
				t.Errorf("want every send acked and lost: %+v", brief(tl))
			}
		}},
		{"drop", true, false, 0, func(t *testing.T, tl Tally) {
			if tl.Sent < 4 || tl.Unanswered != tl.Sent || tl.Lost != 0 || tl.Reconnects == 0 || tl.Replies != 0 {
				t.Errorf("want every send unanswered on a dropped socket, reconnects: %+v", brief(tl))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/all-events=%t/rate=%g", tt.mode, tt.allEvents, tt.rate), func(t *testing.T) {
			bus := &fakeBus{mode: tt.mode}
			srv := httptest.NewUnstartedServer(bus)
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut short at the end
			srv.StartTLS()
			defer srv.Close()
			tl, err := Drive(t.Context(), LoadConfig{
				Target:  Target{URL: "wss" + strings.TrimPrefix(srv.URL, "https") + "/ws", TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig, Token: "tok"},
				Clients: 2, Duration: 300 * time.Millisecond, Grace: grace(tt.mode), Reconnect: tt.reconnect,
				AllEvents: tt.allEvents, Rate: tt.rate})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, tl)
			// The clients ask for output frames only, unless told to get
			// every event (no subscribe request).
			var want []string
			if !tt.allEvents {
				want = []string{"output"}
			}
			bus.mu.Lock()
			got := bus.subscribed
			bus.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Errorf("subscribed to %q, want %q", got, want)
			}
		})
	}
}

// answered checks a tally where every send was answered.
func answered(t *testing.T, tl Tally) {
	t.Helper()
	if tl.Sent == 0 || tl.Replies != tl.Sent || tl.Acked != tl.Sent || tl.Lost != 0 || tl.Errors != 0 ||
		len(tl.Latencies) != int(tl.Replies) {
		t.Errorf("want every send answered: %+v", brief(tl))
	}
}

// TestDriveRefusesBadConfig checks the configuration errors.
func TestDriveRefusesBadConfig(t *testing.T) {
	for _, cfg := range []LoadConfig{{}, {Target: Target{URL: "wss://x/ws"}, Clients: -1},
		{Target: Target{URL: "wss://x/ws"}, Rate: -1}} {
		if _, err := Drive(t.Context(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// grace is how long Drive waits for outstanding replies: long where every
// request is answered (a client stops waiting once it has its replies, so
// only a loaded machine makes it wait at all), short where some never are.
func grace(mode string) time.Duration {
	if mode == "answer" || mode == "refuse" {
		return 30 * time.Second
	}
	return 200 * time.Millisecond
}

// brief is a tally without its latencies, for failure messages.
func brief(tl Tally) Tally {
	tl.Latencies = nil
	return tl
}
