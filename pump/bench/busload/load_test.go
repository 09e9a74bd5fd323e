package busload

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeBus is a /ws server that acknowledges every send and then behaves
// as its mode says: "answer" (the output frame), "silent" (never answers)
// or "drop" (closes the socket instead of answering).
type fakeBus struct {
	mode    string
	sockets atomic.Int64
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
	for {
		var req struct {
			Type string `json:"type"`
			ID   int64  `json:"id"`
		}
		if err := ws.ReadJSON(&req); err != nil {
			return
		}
		conv := fmt.Sprintf("conv-%d-%d", n, req.ID)
		_ = ws.WriteJSON(map[string]any{"type": "sent", "id": req.ID, "thread_id": conv, "target": "greeter"})
		switch f.mode {
		case "answer":
			_ = ws.WriteJSON(map[string]any{"type": "message", "thread_id": conv, "payload": "<x/>"})
			_ = ws.WriteJSON(map[string]any{"type": "output", "thread_id": conv, "from": "response-handler",
				"text": DefaultReply})
			_ = ws.WriteJSON(map[string]any{"type": "complete", "thread_id": conv})
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
		check     func(t *testing.T, tl Tally)
	}{
		{"answer", false, func(t *testing.T, tl Tally) {
			if tl.Sent == 0 || tl.Replies != tl.Sent || tl.Acked != tl.Sent || tl.Lost != 0 || tl.Errors != 0 ||
				len(tl.Latencies) != int(tl.Replies) {
				t.Errorf("want every send answered: %+v", brief(tl))
			}
		}},
		{"silent", false, func(t *testing.T, tl Tally) {
			// closed loop: one request per client, acknowledged, never answered
			if tl.Sent != 2 || tl.Acked != 2 || tl.Replies != 0 || tl.Lost != 2 {
				t.Errorf("want 2 sent, acked and lost: %+v", brief(tl))
			}
		}},
		{"drop", true, func(t *testing.T, tl Tally) {
			if tl.Sent < 4 || tl.Unanswered != tl.Sent || tl.Lost != 0 || tl.Reconnects == 0 || tl.Replies != 0 {
				t.Errorf("want every send unanswered on a dropped socket, reconnects: %+v", brief(tl))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(&fakeBus{mode: tt.mode})
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut short at the end
			srv.StartTLS()
			defer srv.Close()
			tl, err := Drive(t.Context(), LoadConfig{
				Target:  Target{URL: "wss" + strings.TrimPrefix(srv.URL, "https") + "/ws", TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig, Token: "tok"},
				Clients: 2, Duration: 300 * time.Millisecond, Grace: grace(tt.mode), Reconnect: tt.reconnect})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, tl)
		})
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
	if mode == "answer" {
		return 30 * time.Second
	}
	return 200 * time.Millisecond
}

// brief is a tally without its latencies, for failure messages.
func brief(tl Tally) Tally {
	tl.Latencies = nil
	return tl
}
