package mcpclient

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// noisyServer is an MCP server on stdio that writes what many servers
// write on their stdout by mistake beside the protocol: a banner at start,
// a debug line, a JSON log line and a blank line before each answer. Its
// tool "pid" answers its process id.
func noisyServer() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	fmt.Println("noisy server 1.0 listening on stdio")
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		result := map[string]any{}
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "noisy", "version": "v0"}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "pid", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			fmt.Println("debug: calling pid")
			fmt.Println(`{"level":"info","msg":"pid called"}`)
			fmt.Println()
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprint(os.Getpid())}}}
		}
		_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}

// TestMountSkipsStrayOutput: a command server that writes lines which are
// no JSON-RPC message on its stdout (a banner, debug or JSON log lines) is
// mounted and answers its calls — the lines are skipped and logged, as the
// TypeScript SDK skips them — instead of failing the load, or breaking the
// session at the first one and being restarted at every call.
func TestMountSkipsStrayOutput(t *testing.T) {
	t.Setenv(serverEnv, "noisy")
	var logs lockedBuffer
	_, tools := mount(t, Options{Name: "noisy", Command: []string{os.Args[0]}, Env: []string{serverEnv},
		Timeout: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	first := call(t, tools["noisy.pid"], `<noisy.pid/>`)
	second := call(t, tools["noisy.pid"], `<noisy.pid/>`)
	if first.Error != "" || first.Text == "" || second.Text != first.Text {
		t.Fatalf("calls: %+v then %+v, want the same pid twice (no restart)", first, second)
	}
	for _, want := range []string{"noisy server 1.0 listening on stdio", "debug: calling pid", `{\"level\":\"info\",\"msg\":\"pid called\"}`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not show the skipped line %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "restart") {
		t.Errorf("the server was restarted:\n%s", logs.String())
	}
}
