package organism

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
)

// TestCallableCycleMeetsTheHopLimit: two agents whose models always call
// the other's callable would nest calls for ever, each call a conversation
// of its own beginning at no hops. A call's conversation counts on from its
// caller's hops, so the cycle meets max_chain_depth like one chain: the
// innermost call is refused, and every agent answers its caller. (The
// callables' requires: let each call reach the other's, or the narrowing
// of profiles would end the cycle first.)
func TestCallableCycleMeetsTheHopLimit(t *testing.T) {
	var requests atomic.Int64
	var mu sync.Mutex
	var refusals []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		var body struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) < 2 || n > 200 {
			w.WriteHeader(http.StatusInternalServerError) // a cycle that never ends stops here
			return
		}
		other := "pong"
		if strings.HasPrefix(fmt.Sprint(body.Messages[1].Content), "You are pong") {
			other = "ping"
		}
		msg, finish := map[string]any{"role": "assistant", "content": "gave up"}, "stop"
		if last := body.Messages[len(body.Messages)-1]; last.Role != "tool" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", n), "type": "function",
				"function": map[string]any{"name": other + "_call", "arguments": `{"Job":"go on"}`}}}}
			finish = "tool_calls"
		} else if c := fmt.Sprint(last.Content); strings.Contains(c, "hops") {
			mu.Lock()
			refusals = append(refusals, c)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": body.Model, "choices": []any{map[string]any{
			"message": msg, "finish_reason": finish}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	agentYAML := func(name, other string) string {
		return fmt.Sprintf(`  - name: %[1]s
    agent: true
    description: Passes work on
    prompt: You are %[1]s.
    peers: [%[2]s.call]
    max_iterations: 4
    callable:
      description: Passes the work on
      timeout: 60s
      requires: [%[1]s.call, %[2]s.call, %[2]s]
      parameters:
        - {name: Job, required: true}
`, name, other)
	}
	o := agentOrganismWith(t, &scriptedModel{Server: srv}, "max_chain_depth: 12\nlisteners:\n"+
		agentYAML("ping", "pong")+agentYAML("pong", "ping"), Options{})

	l, ok := o.Pump.Lookup("ping")
	if !ok {
		t.Fatal("no listener ping")
	}
	v := reflect.New(l.Payload.GoType())
	v.Elem().FieldByName("Text").SetString("start")
	replies := make(chan string, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := o.Pump.Send(ctx, "console", "ping", v.Interface(), pump.OutletFunc(func(e pump.Event) {
		switch {
		case e.Kind == pump.EventReply:
			if a, ok := e.Payload.(*llm.Answer); ok {
				replies <- a.Text
			}
		case e.Kind == pump.EventHuh:
			replies <- "huh: " + e.Error
		}
	})); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-replies:
		if got != "gave up" {
			t.Fatalf("ping answered %q, want %q", got, "gave up")
		}
	case <-ctx.Done():
		t.Fatalf("ping never answered (%d model requests)", requests.Load())
	}
	if n := requests.Load(); n > 40 {
		t.Errorf("%d model requests: the cycle of calls ran past max_chain_depth", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refusals) != 1 || !strings.Contains(refusals[0], "12 hops") {
		t.Errorf("the innermost agent heard %q, want one refusal naming the 12 hops", refusals)
	}
}
