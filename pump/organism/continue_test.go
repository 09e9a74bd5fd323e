package organism

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// durableAgents starts a durable organism on dir whose agents talk to m.
func durableAgents(t *testing.T, m *scriptedModel, dir, yaml string) *Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
%s`, m.URL, yaml)))
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

// askAs sends text to agent as who on thread and returns the answer.
func askAs(t *testing.T, o *Organism, who pump.Principal, agent, thread, text string) (string, error) {
	t.Helper()
	l, ok := o.Pump.Lookup(agent)
	if !ok {
		t.Fatalf("no listener %s", agent)
	}
	body := fmt.Sprintf(`<%s xmlns=""><Text>%s</Text></%[1]s>`, l.Payload.Name(), text)
	env := stage.AppendEnvelope(nil, who.From, agent, thread, []byte(body))
	replies := make(chan string, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := o.Pump.InjectAs(ctx, env, pump.OutletFunc(func(e pump.Event) {
		if e.Kind != pump.EventReply {
			return
		}
		switch a := e.Payload.(type) {
		case *llm.Answer:
			replies <- a.Text
		case *llm.Halted:
			replies <- a.Text
		}
	}), who); err != nil {
		return "", err
	}
	select {
	case r := <-replies:
		return r, nil
	case <-ctx.Done():
		t.Fatal("no answer")
		return "", nil
	}
}

// TestConversationContinuesAfterRestart: a durable organism keeps an agent
// conversation's history after it completed and across a restart: the
// user who began it continues it on its thread id and the model gets the
// earlier exchange; another user naming it is refused.
func TestConversationContinuesAfterRestart(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"answer 1", "answer 2"}})
	dir := t.TempDir()
	alice := pump.Principal{From: "api:alice", User: "alice"}
	bob := pump.Principal{From: "api:bob", User: "bob"}
	thread := stage.NewThreadID()

	o := durableAgents(t, m, dir, twoAgents)
	if got, err := askAs(t, o, alice, "poet", thread, "first"); err != nil || got != "answer 1" {
		t.Fatalf("first: %q, %v", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	o = durableAgents(t, m, dir, twoAgents)
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if _, err := askAs(t, o, bob, "poet", thread, "mine?"); !errors.Is(err, pump.ErrForeignThread) {
		t.Fatalf("bob continuing alice's conversation: %v, want ErrForeignThread", err)
	}
	if got, err := askAs(t, o, alice, "poet", thread, "second"); err != nil || got != "answer 2" {
		t.Fatalf("continuation after the restart: %q, %v", got, err)
	}
	reqs := m.requests("poet")
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var first, answer bool
	for _, msg := range reqs[1].Messages {
		first = first || msg["role"] == "user" && strings.HasSuffix(msg["content"], "\nfirst")
		answer = answer || msg["role"] == "assistant" && msg["content"] == "answer 1"
	}
	if !first || !answer {
		t.Errorf("the request after the restart lacks the first exchange: %v", reqs[1].Messages)
	}
}

// TestCallsJournaled: each model call of a turn is a row of the journal's
// llm_calls table — agent, backend, model, tokens, timing — linked to the
// envelope the turn produced (the answer), and the organism's subscribers
// hear of it; a peer's call is linked to its own answer.
func TestCallsJournaled(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss": {"I will ask the poet. <PoetTask><Text>a haiku about rain</Text></PoetTask>", "The poet wrote: drops"},
		"poet": {"drops"},
	})
	o := durableAgents(t, m, t.TempDir(), twoAgents)
	t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	heard := make(chan Call, 8)
	defer o.OnCall(func(c Call) { heard <- c })()
	alice := pump.Principal{From: "api:alice", User: "alice"}
	conv := stage.NewThreadID()
	if got, err := askAs(t, o, alice, "boss", conv, "a poem please"); err != nil || got != "The poet wrote: drops" {
		t.Fatalf("answer %q, %v", got, err)
	}
	if err := o.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls, err := o.Calls(conv, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3: %+v", len(calls), calls)
	}
	entries, err := o.Store().Conversation(conv)
	if err != nil {
		t.Fatal(err)
	}
	from := map[int64]string{}
	for _, e := range entries {
		from[e.Seq] = e.From + "→" + e.To
	}
	for i, want := range []struct{ agent, link string }{
		{"boss", "boss→poet"}, {"poet", "poet→boss"}, {"boss", "boss→api:alice"},
	} {
		c := calls[i]
		if c.Agent != want.agent || c.Backend != "openai" || c.Model != "gpt-test" || c.PromptTokens != 11 ||
			c.CompletionTokens != 7 || c.Duration <= 0 || c.Error != "" || c.Conversation != conv || c.Attempt != 1 {
			t.Errorf("call %d: %+v", i, c)
		}
		if got := from[c.EnvelopeSeq]; got != want.link {
			t.Errorf("call %d (%s) linked to seq %d (%s), want the envelope %s", i, c.Agent, c.EnvelopeSeq, got, want.link)
		}
	}
	for range 3 {
		select {
		case c := <-heard:
			if c.ID == 0 || c.Conversation != conv {
				t.Errorf("subscriber heard %+v", c)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the subscriber did not hear every call")
		}
	}
}
