package organism

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry"
)

// TestContinueAfterHistoryExpired: a conversation continued after its
// history expired (the context TTL collected it) is answered by a model
// told so in a system note, and the user is told once through the
// agent's interim text; a conversation whose history is there gets
// neither.
func TestContinueAfterHistoryExpired(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"answer 1", "answer 2", "answer 3", "answer 4"}})
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
%s`, m.URL, twoAgents)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	cb, err := registry.NewContextBuffer(registry.ContextConfig{TTL: time.Hour, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Context: cb})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), agentWait)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	var interims []string
	var imu sync.Mutex
	withInterim := WithInterim(func(i Interim) {
		imu.Lock()
		defer imu.Unlock()
		interims = append(interims, i.Text)
	})
	ev, err := o.AskText(ctx, "poet", "my name is Dan", withInterim)
	if err != nil {
		t.Fatal(err)
	}
	conv := ev.Conversation
	if _, err := o.ContinueText(ctx, conv, "poet", "still there?", withInterim); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if n := cb.Collect(); n == 0 {
		t.Fatal("Collect removed no history")
	}
	for _, text := range []string{"what is my name?", "and now?"} {
		if _, err := o.ContinueText(ctx, conv, "poet", text, withInterim); err != nil {
			t.Fatal(err)
		}
	}

	reqs := m.requests("poet")
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for i, req := range reqs {
		var noted, earlier bool
		for _, msg := range req.Messages {
			noted = noted || msg["role"] == "system" && strings.Contains(msg["content"], "earlier history of this conversation expired")
			earlier = earlier || strings.Contains(msg["content"], "my name is Dan")
		}
		if want := i >= 2; noted != want {
			t.Errorf("request %d: expiry note %v, want %v: %v", i+1, noted, want, req.Messages)
		}
		if want := i < 2; earlier != want {
			t.Errorf("request %d: earlier history %v, want %v", i+1, earlier, want)
		}
	}
	imu.Lock()
	defer imu.Unlock()
	want := "[the earlier history of this conversation expired (no message for 1h, " +
		"platform.context_buffer.ttl_hours): poet does not remember it]"
	if len(interims) != 1 || interims[0] != want {
		t.Errorf("interim texts %q, want exactly [%q]", interims, want)
	}
}
