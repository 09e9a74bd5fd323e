package organism_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// mathbotOrganism starts an organism whose agent mathbot, with the
// calculate tool, talks to the model at url.
func mathbotOrganism(t *testing.T, url string) *organism.Organism {
	t.Helper()
	cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: math}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: `+url+`, model: test-model}
listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tools: [calculate]
`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	return o
}

// TestAskWithInterim: a Go caller that asks with WithInterim sees the text
// the agent's model wrote beside its tool call, before the answer and on
// the answer's conversation — also when it continues the conversation; a
// caller without the option gets the answer alone, as before.
func TestAskWithInterim(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n%2 == 0 {
			return []string{"Let me ", "compute that.", llmtest.ToolCall("c1", "calculate", `{"Expression":"6*7"}`)}
		}
		return []string{"It is 42."}
	})
	o := mathbotOrganism(t, m.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	var got []organism.Interim
	collect := organism.WithInterim(func(i organism.Interim) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, i)
	})
	answer, err := o.AskText(ctx, "mathbot", "what is 6*7?", collect)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := organism.PayloadText(answer.Payload); text != "It is 42." {
		t.Fatalf("answer %q", text)
	}
	next, err := o.ContinueText(ctx, answer.Conversation, "mathbot", "and again?", collect)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.AskText(ctx, "mathbot", "once more, unwatched"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []organism.Interim{
		{Conversation: answer.Conversation, Agent: "mathbot", Text: "Let me compute that."},
		{Conversation: next.Conversation, Agent: "mathbot", Text: "Let me compute that."},
	}
	for i := range got {
		if got[i].Thread == "" {
			t.Errorf("interim %d names no thread", i)
		}
		got[i].Thread = ""
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("interim text (-want +got):\n%s", d)
	}
}

// TestAskWithInterimPanics: a WithInterim callback that panics costs the
// caller its interim text, not the agent its turn: the answer still comes.
func TestAskWithInterimPanics(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string {
		if n == 0 {
			return []string{"Let me compute that.", llmtest.ToolCall("c1", "calculate", `{"Expression":"6*7"}`)}
		}
		return []string{"It is 42."}
	})
	o := mathbotOrganism(t, m.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	answer, err := o.AskText(ctx, "mathbot", "what is 6*7?", organism.WithInterim(func(organism.Interim) {
		panic("the caller's bug")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := organism.PayloadText(answer.Payload); text != "It is 42." {
		t.Fatalf("answer %q", text)
	}
}
