package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Stall is the payload of a listener that answers only once its handling
// ends: its test kills or cancels the conversation meanwhile.
type Stall struct {
	Text string
}

// Oops is the payload of a listener whose handler fails.
type Oops struct {
	Text string
}

// fakeModel answers an OpenAI chat completion as the agent whose prompt
// ("You are <agent>.") the request carries: poet with a line, every other
// agent with HTTP 404 (its model call fails, and the agent halts).
func fakeModel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), "You are poet.") {
			http.Error(w, "no such model", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test", "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "Rain taps the roof."}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

const refusalsConstitution = `---
document_type: constitution
version: "1.0"
scope: all_agents
authority_level: supreme
rules:
  - id: no-rm-rf
    deny: '(?i)\brm\s+-rf\b'
    reason: Destructive shell commands are forbidden
    suggestion: Delete single files instead
    severity: high
  - id: pay
    review: '(?i)\bpay\b'
    reason: Payments are decided by a human
---
# House rules
`

// refusalsOrganism starts an organism with three agents (poet and clerk
// answer, clerk's reviewed calls wait a second for a human, broken's model
// fails), a stall and an oops listener, governed by
// refusalsConstitution; started reports each stall handling's thread.
func refusalsOrganism(t *testing.T, started chan<- string) *organism.Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	dir := t.TempDir()
	doc := filepath.Join(dir, "CONSTITUTION.md")
	if err := os.WriteFile(doc, []byte(refusalsConstitution), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`organism: {name: mcp-refusals}
constitution: [%s]
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
  - name: clerk
    agent: true
    description: Its calls wait a second for a human
    prompt: You are poet. Clerk, too.
    approval_timeout: 1s
  - name: broken
    agent: true
    description: Its model is gone
    prompt: You are broken.
`, doc, fakeModel(t).URL)
	cfg, err := config.Parse("organism.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	stall := func(ctx context.Context, _ *Stall, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		started <- md.ThreadID
		<-ctx.Done()
		return nil, ctx.Err()
	}
	oops := func(context.Context, *Oops, xmlpipe.Metadata) (xmlpipe.Response, error) {
		return nil, errors.New("the disk at /srv/secret is full")
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler), Listeners: []organism.Listener{
		organism.Func("stall", "Answers only once its handling ends", stall),
		organism.Func("oops", "Fails", oops),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return o
}

// connectBridge serves b to a client over in-memory transports.
func connectBridge(t *testing.T, b *Bridge) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-served
		cancel()
		b.Close()
	})
	return cs
}

// TestRefusalsAreToolErrors: every way a call ends without an answer — the
// agent halted, the conversation killed or its answer cancelled, a
// constitution's refusal, a human's denial, an approval that expired, the
// call's timeout, a <huh> —
// reaches the MCP client as a tool error (isError) whose text says which,
// while a real answer stays a success.
func TestRefusalsAreToolErrors(t *testing.T) {
	started := make(chan string, 4)
	o := refusalsOrganism(t, started)
	cs := connectBridge(t, New(o.Pump, Options{Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}))
	short := connectBridge(t, New(o.Pump, Options{Timeout: time.Second, Logger: slog.New(slog.DiscardHandler)}))
	ctx := t.Context()

	// decide answers the first pending approval.
	decide := func(approve bool) {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			as, err := o.Governance().Approvals(ctx, organism.ApprovalFilter{Status: organism.StatusPending})
			if err == nil && len(as) > 0 {
				if _, err := o.Governance().Decide(ctx, as[0].ID, approve, "alice", "not today"); err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("no approval pending within a minute")
	}
	// onStall ends the stalled handling's conversation with end.
	onStall := func(end func(thread string) error) func() {
		return func() {
			select {
			case thread := <-started:
				if err := end(thread); err != nil {
					t.Error(err)
				}
			case <-time.After(time.Minute):
				t.Error("stall never ran")
			}
		}
	}
	tests := []struct {
		name    string
		cs      *sdk.ClientSession
		tool    string
		args    map[string]any
		during  func()
		isError bool
		want    string
	}{
		{"answer", cs, "poet", map[string]any{"Text": "rain"}, nil, false, "Rain taps the roof."},
		{"agent halted", cs, "broken", map[string]any{"Text": "hi"}, nil, true, "broken halted: model call failed"},
		{"killed", cs, "stall", map[string]any{"Text": "x"}, onStall(func(th string) error {
			_, err := o.Pump.Kill(th)
			return err
		}), true, "stall: the conversation was killed"},
		{"cancelled", cs, "stall", map[string]any{"Text": "x"}, onStall(func(th string) error {
			_, err := o.Pump.Cancel(th)
			return err
		}), true, "stall: the answer was cancelled"},
		{"refused by a rule", cs, "poet", map[string]any{"Text": "rm -rf /"}, nil, true,
			"refused (high, rule no-rm-rf): Destructive shell commands are forbidden — Delete single files instead"},
		{"denied by a human", cs, "poet", map[string]any{"Text": "pay the plumber"}, func() { decide(false) }, true,
			"refused (medium, rule pay): denied by alice: not today"},
		{"approved by a human", cs, "poet", map[string]any{"Text": "pay the plumber"}, func() { decide(true) }, false,
			"Rain taps the roof."},
		{"approval expired", cs, "clerk", map[string]any{"Text": "pay the plumber"}, nil, true,
			"refused (medium, rule pay): approval timed out"},
		{"timeout", short, "stall", map[string]any{"Text": "x"}, func() { <-started }, true,
			"no answer from stall within 1s"},
		{"huh", cs, "oops", map[string]any{"Text": "x"}, nil, true, "Message could not be processed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			if tc.during != nil {
				wg.Go(tc.during)
			}
			r, err := tc.cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if r.IsError != tc.isError || !strings.Contains(text(r), tc.want) {
				t.Errorf("isError %v %q, want isError %v with %q", r.IsError, text(r), tc.isError, tc.want)
			}
			if strings.Contains(text(r), "/srv/secret") {
				t.Errorf("the handler's error reached the client: %q", text(r))
			}
		})
	}
}
