package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fuzzSeeds are input lines of every kind the stdio session meets.
var fuzzSeeds = []string{
	fmt.Sprintf(initLine, "2025-06-18"),
	fmt.Sprintf(initLine, "2025-03-26"),
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	callLine(3, "greeter", `{"Name":"Dan"}`),
	callLine(4, "calculate", `{"Expression":"6*7"}`),
	`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}]`,
	`{"jsonrpc":"2.0","id":6,"result":{}}`,
	`{"foo":1}`,
	`not json`,
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}",
	`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`,
	`[]`,
}

// FuzzParseLine: the line validator never panics, every answer it writes is
// a JSON-RPC error object, and what it lets through decodes.
func FuzzParseLine(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, line []byte, batches bool) {
		p := parseLine(line, batches, "2025-06-18")
		if len(p.msgs) == 0 && len(p.errs) == 0 {
			t.Fatalf("%q: neither a message nor an answer", line)
		}
		for _, e := range p.errs {
			b, err := json.Marshal(e)
			if err != nil || !json.Valid(b) {
				t.Fatalf("%q: answer %q does not encode: %v", line, b, err)
			}
			if e.Code != codeParseError && e.Code != codeInvalidRequest {
				t.Fatalf("%q: code %d", line, e.Code)
			}
		}
		if !batches && p.batch {
			t.Fatalf("%q: a batch let through", line)
		}
	})
}

// FuzzServeStdio runs a whole stdio session over an in-memory pipe: an
// initialize line, then the fuzzed input, then the end of input. The
// session must end promptly, write only JSON lines, and answer initialize.
func FuzzServeStdio(f *testing.F) {
	for _, s := range fuzzSeeds[2:] {
		f.Add([]byte(s + "\n" + fuzzSeeds[4]))
	}
	o := startOrganism(f)
	defer o.Shutdown(context.Background())
	b := New(o.Pump, Options{Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fmt.Sprintf(initLine, "2025-06-18") + "\n" + string(data)
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() {
			done <- b.ServeStdio(context.Background(), strings.NewReader(in), &out,
				StdioOptions{Drain: time.Second, MaxLine: 1 << 16})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("ServeStdio: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("the session did not end; input %q", data)
		}
		initialized := false
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !json.Valid([]byte(l)) {
				t.Fatalf("output line is not JSON: %q (input %q)", l, data)
			}
			initialized = initialized || strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,"result":{`)
		}
		if !initialized {
			t.Fatalf("initialize not answered: %q", out.String())
		}
	})
}
