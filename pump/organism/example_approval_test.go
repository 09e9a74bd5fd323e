package organism_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// fakeModel is a stand-in for an OpenAI-style provider: its first answer
// calls the calculate tool, every later one reports the last tool result
// (or refusal) it was given.
func fakeModel() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function",
			"function": map[string]any{"name": "calculate", "arguments": `{"Expression":"6*7"}`}}}}
		finish := "tool_calls"
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			msg, finish = map[string]any{"role": "assistant", "content": "the tool said " + last.Content}, "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "fake", "choices": []any{
			map[string]any{"message": msg, "finish_reason": finish}}})
	}))
}

// An LLM agent run from Go whose tool calls wait for a human: the
// agent's approval list holds its call to calculate until someone decides.
// Governance().Subscribe tells the program of every call that begins
// waiting (Approvals lists them), and Decide approves or denies it — the
// agent then answers from the tool's result, or from the refusal. The
// model here is a local fake server, as a test would use.
func ExampleGovernance_Decide() {
	model := fakeModel()
	defer model.Close()
	cfg, err := config.Parse("organism.yaml", []byte(`
organism: {name: demo}
llm:
  backends:
    - {provider: openai, name: local, base_url: `+model.URL+`, model: fake}
listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You answer arithmetic questions with the calculate tool.
    tools: [calculate]
    approval: [calculate]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer o.Shutdown(context.Background())
	gov := o.Governance()
	waiting := make(chan organism.Approval, 1)
	defer gov.Subscribe(func(e organism.GovernanceEvent) {
		if e.Kind == organism.EventApproval {
			waiting <- *e.Approval
		}
	})()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, approve := range []bool{true, false} {
		answered := make(chan string, 1)
		go func() {
			answer, err := o.AskText(ctx, "mathbot", "what is 6*7?")
			if err != nil {
				answered <- err.Error()
				return
			}
			text, _ := organism.PayloadText(answer.Payload)
			answered <- text
		}()
		a := <-waiting
		fmt.Printf("%s → %s waits (%s)\n", a.Agent, a.Target, a.Status)
		d, err := gov.Decide(ctx, a.ID, approve, "alice", "not now")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(d.Status+":", <-answered)
	}
	// Output:
	// mathbot → calculate waits (pending)
	// approved: the tool said {"Expression":"6*7","Value":"42"}
	// mathbot → calculate waits (pending)
	// denied: the tool said Error: The call was refused (medium): denied by alice: not now
}
