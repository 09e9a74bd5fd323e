package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// rememberingYAML is an agent with memory stored at once (consent always).
const rememberingYAML = `organism: {name: remembering}
memory: {consent: always}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: keeper
    agent: true
    description: Keeps notes
    prompt: You are keeper.
    memory: true
`

// rememberingConfig starts a loopback model that calls remember with
// content until the memory is stored, then answers "Kept."; it writes the
// organism's configuration and returns its path.
func rememberingConfig(t *testing.T, content string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_rem", "type": "function", "function": map[string]any{"name": "remember",
				"arguments": fmt.Sprintf(`{"Content":%q}`, content)}}}}
		finish := "tool_calls"
		if strings.Contains(string(b), "Remembered as memory") {
			msg, finish = map[string]any{"role": "assistant", "content": "Kept."}, "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg,
			"finish_reason": finish}}})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(rememberingYAML, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var listedMemory = regexp.MustCompile(`(?m)^  ([0-9a-f]{12})  .*by keeper  consent policy:always  "I like green tea"`)

func TestLocalConsoleListsAndForgetsMemories(t *testing.T) {
	path := rememberingConfig(t, "I like green tea")
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	in, out, done := interactive(t, l)
	fmt.Fprintln(in, "/memory")
	out.waitFor(t, regexp.MustCompile(`No memories\.`))
	fmt.Fprintln(in, "@keeper remember that I like green tea")
	out.waitFor(t, regexp.MustCompile(`\[keeper\] Kept\.`))
	fmt.Fprintln(in, "/memory tea")
	id := out.waitFor(t, listedMemory)[1]
	fmt.Fprintln(in, "/forget")
	out.waitFor(t, regexp.MustCompile(`Usage: /forget <id>`))
	fmt.Fprintln(in, "/forget "+id)
	out.waitFor(t, regexp.MustCompile(`Memory `+id+` forgotten \(kept by keeper\)\.`))
	fmt.Fprintln(in, "/forget "+id)
	out.waitFor(t, regexp.MustCompile(`No memory `+id+`\.`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if ms, _ := l.Organism().Memories(context.Background(), organism.MemoryFilter{AllUsers: true}); len(ms) != 0 {
		t.Fatalf("memories after /forget: %+v", ms)
	}
}

// TestRemoteConsoleMemoriesAreTheUsers: over a connection /memory lists the
// user's own memories and /forget deletes one; another user sees none and
// cannot delete it.
func TestRemoteConsoleMemoriesAreTheUsers(t *testing.T) {
	path := rememberingConfig(t, "I like green tea")
	b := startBusWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	olga := b.dial(t, "olga", b.user(t, "olga", auth.Operator))
	in, out, done := interactive(t, olga)
	fmt.Fprintln(in, "@keeper remember that I like green tea")
	out.waitFor(t, regexp.MustCompile(`\[keeper\] Kept\.`))
	fmt.Fprintln(in, "/memory")
	id := out.waitFor(t, regexp.MustCompile(`(?m)^  ([0-9a-f]{12})  .*user olga  by keeper  consent policy:always  "I like green tea"`))[1]

	vic := b.dial(t, "vic", b.user(t, "vic", auth.Viewer))
	vin, vout, vdone := interactive(t, vic)
	fmt.Fprintln(vin, "/memory")
	vout.waitFor(t, regexp.MustCompile(`No memories\.`))
	fmt.Fprintln(vin, "/forget "+id)
	vout.waitFor(t, regexp.MustCompile(`No memory `+id+`\.`))
	fmt.Fprintln(vin, "/quit")
	if err := <-vdone; err != nil {
		t.Fatalf("run: %v\n%s", err, vout)
	}

	fmt.Fprintln(in, "/forget "+id)
	out.waitFor(t, regexp.MustCompile(`Memory `+id+` forgotten \(kept by keeper\)\.`))
	fmt.Fprintln(in, "/memory")
	out.waitFor(t, regexp.MustCompile(`forgotten(?s:.*)No memories\.`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}
