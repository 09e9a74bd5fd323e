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

// TestConnectNamesAServerWritingNoJSONRPC: a command that answers the
// handshake with lines that are no JSON-RPC (they are skipped) is refused
// at the timeout with an error saying how many such lines it wrote, and
// one of them, so that the operator sees at once what the command is.
func TestConnectNamesAServerWritingNoJSONRPC(t *testing.T) {
	_, err := Connect(context.Background(), Options{Name: "chatty",
		Command: []string{"sh", "-c", `while read -r line; do echo "Usage: chatty [--help]"; done`}, Timeout: time.Second,
		Logger: quietLogger()})
	if err == nil {
		t.Fatal("a server writing no JSON-RPC was mounted")
	}
	for _, want := range []string{"chatty", "no answer to the MCP handshake within 1s", "no JSON-RPC on its stdout",
		`"Usage: chatty [--help]"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
}
