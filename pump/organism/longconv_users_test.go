package organism_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestLongConversationsAtOnce: two callers each hold a long conversation
// with the same agent at the same time: every request the model gets holds
// one caller's turns only, all of them, in order — nothing of the other's.
func TestLongConversationsAtOnce(t *testing.T) {
	const turns = 40
	m := newLongModel(t, func(msgs []llmtest.Message) []string {
		last := msgs[len(msgs)-1]
		if last.Role == "tool" {
			return []string{"result " + last.Content}
		}
		_, text, _ := strings.Cut(last.Content, "\n")
		if strings.HasSuffix(text, "5") { // every tenth turn or so calls a tool
			return []string{llmtest.ToolCall("c-"+strings.ReplaceAll(text, " ", "-"), "calculate", `{"Expression":"1+1"}`)}
		}
		return []string{"answer to " + text}
	})
	o := startLongConv(t, m.URL, t.TempDir(), "")
	defer func() { _ = o.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	users := []string{"alice", "bob"}
	convs := make([]string, len(users))
	errs := make(chan error, len(users))
	var wg sync.WaitGroup
	for i, user := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := ""
			for k := 1; k <= turns; k++ {
				ev, err := o.ContinueText(ctx, conv, "mathbot", fmt.Sprintf("%s %d", user, k))
				if err != nil {
					errs <- fmt.Errorf("%s turn %d: %w", user, k, err)
					return
				}
				conv = ev.Conversation
				want := fmt.Sprintf("answer to %s %d", user, k)
				if k%10 == 5 {
					want = `result {"Expression":"1+1","Value":"2"}`
				}
				if text, _ := organism.PayloadText(ev.Payload); text != want {
					errs <- fmt.Errorf("%s turn %d: answer %q, want %q", user, k, text, want)
					return
				}
			}
			convs[i] = conv
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if convs[0] == convs[1] {
		t.Fatalf("both callers on conversation %s", convs[0])
	}
	// Each first request of a turn holds one caller's turns 1…k, in order.
	seen := map[string]int{}
	for n := range m.Count() {
		got := transcript(m.Request(t, n))
		lastLine := got[len(got)-1]
		if !strings.HasPrefix(lastLine, "U ") {
			continue // a request after a tool result
		}
		user, _, _ := strings.Cut(strings.TrimPrefix(lastLine, "U "), " ")
		seen[user]++
		k := seen[user]
		var want []string
		for j := 1; j <= k; j++ {
			text := fmt.Sprintf("%s %d", user, j)
			want = append(want, "U "+text)
			switch {
			case j == k:
			case j%10 == 5:
				id := "c-" + user + "-" + fmt.Sprint(j)
				want = append(want, "C "+id+" calculate", "T "+id+` {"Expression":"1+1","Value":"2"}`,
					`A result {"Expression":"1+1","Value":"2"}`)
			default:
				want = append(want, "A answer to "+text)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("request %d (%s's turn %d) (-want +got):\n%s", n, user, k, d)
		}
	}
	if seen["alice"] != turns || seen["bob"] != turns {
		t.Fatalf("turns seen: %v", seen)
	}
}
