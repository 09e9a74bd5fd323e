package mcpclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConnectNamesASilentServer: a command that reads the handshake and
// never answers it (no MCP server, or one that ignores requests it does
// not know) is refused once the timeout passes with an error naming the
// server, the timeout and what to check — not the SDK's bare "context
// deadline exceeded".
func TestConnectNamesASilentServer(t *testing.T) {
	start := time.Now()
	_, err := Connect(context.Background(), Options{Name: "mute", Command: []string{"sh", "-c", "cat > /dev/null"}, Timeout: time.Second,
		Logger: quietLogger()})
	if err == nil {
		t.Fatal("a server that never answers was mounted")
	}
	if !errors.Is(err, ErrServer) {
		t.Errorf("err = %v, want ErrServer", err)
	}
	for _, want := range []string{"mute", "no answer to the MCP handshake within 1s", "server.timeout", "stdout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Connect took %v", d)
	}
}
