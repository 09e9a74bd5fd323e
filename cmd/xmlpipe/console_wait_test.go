package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsolePipedSlowAnswer: `printf '@poet …\n/status\n/quit\n' | xmlpipe
// console` whose model answers only after the session read /quit prints the
// poem and exits 0 (the answer used to be lost after a 10 s note).
func TestConsolePipedSlowAnswer(t *testing.T) {
	asked := make(chan struct{}, 4)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
		var body struct{ Stream bool }
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Slow rain, late reply.\"}}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"grok-test","choices":[{"message":{"role":"assistant","content":"Slow rain, late reply."},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":4}}`)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()
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
	cmd := exec.Command(binary, "console", "--verbose", "--line-wait", "50ms", "organism.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XAI_API_KEY=sk-e2e")
	cmd.Stdin = strings.NewReader("@poet write about rain\n/status\n/quit\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncWriter{w: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var out []string
	await := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before %q:\n%s\nstderr:\n%s", want, strings.Join(out, "\n"), stderr)
				}
				out = append(out, l)
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no %q within 30s:\n%s\nstderr:\n%s", want, strings.Join(out, "\n"), stderr)
			}
		}
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never asked; stderr:\n%s", stderr)
	}
	await("still running after 50ms; reading on")
	await("Threads: ") // /status ran while the poet waits on its model
	close(hold)        // now the model answers, after /quit was read
	await("[poet] Slow rain, late reply.")
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("console: %v\n%s\nstderr:\n%s", err, strings.Join(out, "\n"), stderr)
	}
	for _, l := range out {
		if strings.Contains(l, "not waiting longer") {
			t.Fatalf("gave up waiting:\n%s", strings.Join(out, "\n"))
		}
	}
}
