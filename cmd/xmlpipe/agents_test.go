package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// chatServer is a loopback xAI (chat completions) server: it answers the
// greeter with a greeting and the poet with a poem, and checks the bearer key.
func chatServer(t *testing.T, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-e2e" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []struct{ Role, Content string }
			Stream   bool
		}
		if err := json.Unmarshal(b, &body); err != nil || len(body.Messages) < 3 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		text := "Welcome aboard, Dan!"
		if strings.Contains(body.Messages[1].Content, "You are a poet") {
			text = "Rain on tin roofs hums.\nPuddles keep the sky."
		}
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{text[:12], text[12:26], text[26:]} {
				fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", d)
				w.(http.Flusher).Flush()
			}
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":"grok-test","choices":[{"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":6}}`, text)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConsoleWithLLMBackend(t *testing.T) {
	var calls atomic.Int32
	srv := chatServer(t, &calls)
	dir := t.TempDir()
	yaml := strings.Replace(string(defaultOrganism), "      api_key_env: XAI_API_KEY\n",
		"      api_key_env: XAI_API_KEY\n      base_url: "+srv.URL+"\n", 1) + `
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are a poet. Answer with one line.
`
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "console", "organism.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XAI_API_KEY=sk-e2e")
	cmd.Stdin = strings.NewReader("@greeter Dan\n@poet write about rain\n/usage\n/quit\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("console: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"[shouter] WELCOME ABOARD, DAN!", "[poet] Rain on tin roofs hums.\nPuddles keep the sky.\n",
		"greeter              40 + 6 = 46 tokens, 1 requests", "xai                  80 + 12 = 92 tokens, 2 requests"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, out.String(), errOut.String())
		}
	}
	if n := strings.Count(out.String(), "Rain on tin roofs"); n != 1 {
		t.Errorf("the answer shows %d times (a piped session prints it once, whole):\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "no LLM backend is usable") {
		t.Errorf("the no-LLM note was printed with a backend:\n%s", out.String())
	}
	if calls.Load() != 2 {
		t.Errorf("%d model calls, want 2", calls.Load())
	}

	// The journal shows each model call beside the envelope it produced.
	tail := runBinary(t, dir, "", "journal", "tail", "-n", "50")
	conv := regexp.MustCompile(`inbound\s+message\s+console → poet \[PoetTask\] thread=([0-9a-f-]{36})`).FindStringSubmatch(tail.stdout)
	if conv == nil {
		t.Fatalf("the journal lacks the poet's conversation:\n%s%s", tail.stdout, tail.stderr)
	}
	th := runBinary(t, dir, "", "journal", "thread", conv[1])
	call := regexp.MustCompile(`(?m)^llm call \d+ \S+ poet xai/\S+ attempt 1: 40 \+ 6 tokens, first token \S+, total \S+, \S+ → #(\d+)\n#(\d+) \S+ outbound message poet → console\n`).FindStringSubmatch(th.stdout)
	if th.code != 0 || call == nil || call[1] != call[2] {
		t.Errorf("journal thread does not show the call before the answer it produced:\n%s%s", th.stdout, th.stderr)
	}
}

func TestBenchAgents(t *testing.T) {
	r := runBinary(t, t.TempDir(), "", "bench", "--agents", "--duration", "200ms", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got agentBench
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if got.Turns == 0 || got.Samples != 2000 || got.P50 <= 0 || got.P99 < got.P50 {
		t.Errorf("result %+v", got)
	}
}
