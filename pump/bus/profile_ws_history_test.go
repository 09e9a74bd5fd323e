package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestProfiledUserListsOwnEndedConversations: a user with a profile finds
// the conversations of their profile on /ws — `threads` and `monitor`,
// what console --connect's /threads, /monitor and /buffer read — once they
// ended too, as GET /api/v1/threads lists them; another user's
// conversation outside the profile stays absent, live or ended.
func TestProfiledUserListsOwnEndedConversations(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)

	inject := func(token, to string, payload map[string]string) string {
		t.Helper()
		status, body, _ := f.do(http.MethodPost, "/api/v1/inject", token, map[string]any{"to": to, "payload": payload})
		if status != http.StatusOK {
			t.Fatalf("inject to %s: %d %v", to, status, body)
		}
		return body["thread_id"].(string)
	}
	mine := inject(calc, "calculate", map[string]string{"expression": "6*7"})
	theirs := inject(open, "greeter", map[string]string{"name": "Dan"})
	for _, conv := range []string{mine, theirs} {
		waitLong(t, conv+" ends", func() bool {
			_, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, open, nil)
			return body["status"] != nil && body["status"] != statusActive
		})
	}
	f.waitJournal()
	// Ended: the registry no longer holds the threads (a restart forgets
	// every ended one).
	f.restartOrganism()
	calc = f.login("calcuser", secret)
	if _, body, _ := f.do(http.MethodGet, "/api/v1/threads", calc, nil); !strings.Contains(mustMarshal(t, body), mine) {
		t.Fatalf("REST does not list the user's conversation %s: %v", mine, body)
	}

	c := f.dial("/ws", calc)
	readUntil(t, c, "connected")
	for _, req := range []map[string]any{
		{"type": "threads", "id": "t"},
		{"type": "monitor", "id": "m1", "prefix": "*"},
		{"type": "monitor", "id": "m2", "prefix": mine[:8]},
	} {
		writeFrame(t, c, req)
		raw := mustMarshal(t, readUntil(t, c, req["type"].(string)))
		if !strings.Contains(raw, mine) {
			t.Errorf("%v: the user's own ended conversation %s is missing:\n%s", req, mine, raw)
		}
		if strings.Contains(raw, theirs) || strings.Contains(raw, "greeter") {
			t.Errorf("%v: shows another user's conversation outside the profile:\n%s", req, raw)
		}
	}
	writeFrame(t, c, map[string]any{"type": "monitor", "id": "m3", "prefix": theirs[:8]})
	if raw := mustMarshal(t, readUntil(t, c, "monitor")); strings.Contains(raw, theirs) {
		t.Errorf("monitor by prefix shows another user's conversation outside the profile:\n%s", raw)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// profiledKeeperYAML is memoryYAML's keeper without memory, reached by
// the profile team.
const profiledKeeperYAML = `organism: {name: profiled-keeper}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
profiles:
  team:
    listeners: [keeper]
listeners:
  - name: keeper
    agent: true
    description: Keeps notes
    prompt: You are keeper.
`

// TestProfiledUserReadsOwnEndedContext: GET /api/v1/threads/{id}/context
// of a conversation of their profile that ended answers a user with a
// profile as the rest of the REST journal does (judged by the profile the
// journal recorded), not 404; a conversation begun without a profile stays
// 404 to them.
func TestProfiledUserReadsOwnEndedContext(t *testing.T) {
	m := newNativeModel(t, "Hi.")
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(profiledKeeperYAML, m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	secret := f.user("uma", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "uma", "team"); err != nil {
		t.Fatal(err)
	}
	uma := f.login("uma", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Operator)
	var convs []string
	for _, token := range []string{uma, open} {
		status, body, _ := f.do(http.MethodPost, "/api/v1/inject", token,
			map[string]any{"to": "keeper", "payload": map[string]string{"text": "hello"}})
		if status != http.StatusOK {
			t.Fatalf("inject: %d %v", status, body)
		}
		conv := body["thread_id"].(string)
		waitLong(t, conv+" completes", func() bool {
			_, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv, open, nil)
			return body["status"] == statusCompleted
		})
		convs = append(convs, conv)
	}
	f.waitJournal()
	f.restartOrganism()
	uma, open = f.login("uma", secret), f.loginAs("olga", auth.Operator)
	for _, conv := range convs {
		if status, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+conv+"/context", open, nil); status != http.StatusOK {
			t.Fatalf("context of %s to a user without a profile: %d %v", conv, status, body)
		}
	}
	for i, want := range []int{http.StatusOK, http.StatusNotFound} {
		if status, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+convs[i]+"/context", uma, nil); status != want {
			t.Errorf("context of %s (%s's): %d %v, want %d", convs[i], []string{"uma", "open"}[i], status, body, want)
		}
	}
}
