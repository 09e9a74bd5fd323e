package bus

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
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
