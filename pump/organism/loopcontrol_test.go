package organism

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
)

// tokenModel is a loopback OpenAI-protocol model for loop-controlled
// agents: its n-th reply is script[n] (the last repeats), where a reply
// "magic:ACTION" calls aeiou_magic for ACTION and "{token}" in a text
// reply stands for the last aeiou_magic result the request carries.
type tokenModel struct {
	*httptest.Server
	mu     sync.Mutex
	script []string
	reqs   []map[string]any
}

func newTokenModel(t *testing.T, script ...string) *tokenModel {
	m := &tokenModel{script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		text := m.script[min(len(m.reqs), len(m.script)-1)]
		m.reqs = append(m.reqs, body)
		n := len(m.reqs)
		m.mu.Unlock()
		msg, finish := map[string]any{"role": "assistant", "content": text}, "stop"
		if action, ok := strings.CutPrefix(text, "magic:"); ok {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "m" + string(rune('0'+n)), "type": "function", "function": map[string]any{"name": aeiou.ToolName,
					"arguments": `{"kind":"LOOP","payload":{"action":"` + action + `"}}`}}}}
			finish = "tool_calls"
		} else {
			msg["content"] = strings.ReplaceAll(text, "{token}", lastTool(body))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg,
			"finish_reason": finish}}})
	}))
	t.Cleanup(m.Close)
	return m
}

// lastTool is the content of the request's last tool message.
func lastTool(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if mm, _ := msgs[i].(map[string]any); mm["role"] == "tool" {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}

func (m *tokenModel) requests() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.reqs...)
}

const looper = `listeners:
  - name: looper
    agent: true
    description: Works in controlled steps
    prompt: You are looper.
    loop_control: aeiou
`

// TestLoopControlledAgentInTheOrganism: loop_control: aeiou in
// organism.yaml puts the agent under AEIOU v3 loop control: it is offered
// aeiou_magic, a continue token asks it again, a done token ends the turn
// with the answer (token stripped), and the organism's observer (the
// metrics, under xmlpipe serve) counts the mints and decisions. With
// aeiou.hmac_secret_env the primary signs HS256.
func TestLoopControlledAgentInTheOrganism(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		tagBytes    int
		hmacKID     bool
	}{
		{"Ed25519", "", 64, false},
		{"HS256", "aeiou: {hmac_secret_env: TEST_AEIOU_SECRET, ttl: 30s}\n", 32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEST_AEIOU_SECRET", "0123456789abcdef0123456789abcdef-test")
			m := newTokenModel(t, "magic:continue", "Step one.\n{token}", "magic:done", "The answer is 42.\n{token}")
			counters := &aeiou.Counters{}
			o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, tc.extra+looper,
				Options{LoopControlObserver: counters})
			if got := startConversation(t, o, "looper", "what is 6*7?").answer(t); got != "The answer is 42." {
				t.Fatalf("answer %q", got)
			}
			reqs := m.requests()
			if len(reqs) != 4 {
				t.Fatalf("%d model requests, want 4", len(reqs))
			}
			if tools := mustJSON(t, reqs[0]["tools"]); !strings.Contains(tools, aeiou.ToolName) {
				t.Fatalf("aeiou_magic not offered: %s", tools)
			}
			tok := lastTool(reqs[1])
			kid, tag := tokenParts(t, tok)
			if !aeiou.IsTokenSyntax(tok) || len(tag) != tc.tagBytes || strings.HasPrefix(kid, "hs256-") != tc.hmacKID {
				t.Fatalf("minted %q (kid %q, %d-byte tag), want a %s token", tok, kid, len(tag), tc.name)
			}
			if last := mustJSON(t, reqs[2]["messages"]); !strings.Contains(last, "You chose continue (turn 1)") {
				t.Fatalf("after continue the model saw %s", last)
			}
			snap := counters.Snapshot()
			if snap.Decisions["continue"] != 1 || snap.Decisions["done"] != 1 || snap.Mints != 2 {
				t.Fatalf("counters %+v", snap)
			}
		})
	}
}

// TestLoopControlIgnoresATokenOfAnotherTurn: a token replayed from an
// earlier turn decides nothing; the answer is delivered as final (the
// missing token's mapping) and the ignored token is counted.
func TestLoopControlIgnoresATokenOfAnotherTurn(t *testing.T) {
	m := newTokenModel(t, "magic:done", "First.\n{token}")
	counters := &aeiou.Counters{}
	o := agentOrganismWith(t, &scriptedModel{Server: m.Server}, looper, Options{LoopControlObserver: counters})
	if got := startConversation(t, o, "looper", "one").answer(t); got != "First." {
		t.Fatalf("answer %q", got)
	}
	old := lastTool(m.requests()[1])
	m.mu.Lock()
	m.script = []string{"Replayed.\n" + old}
	m.reqs = nil
	m.mu.Unlock()
	if got := startConversation(t, o, "looper", "two").answer(t); got != "Replayed." {
		t.Fatalf("answer %q", got)
	}
	snap := counters.Snapshot()
	if snap.Decisions["done"] != 1 || snap.Decisions["halt/"+aeiou.ErrCodeTokenMissing] != 1 || len(snap.Failures) == 0 {
		t.Fatalf("counters %+v", snap)
	}
}

// tokenParts returns a token's kid claim and its tag.
func tokenParts(t *testing.T, tok string) (string, []byte) {
	t.Helper()
	body := strings.TrimSuffix(strings.TrimPrefix(tok, aeiou.TokenPrefix), aeiou.TokenSuffix)
	_, rest, _ := strings.Cut(body, ":")
	p64, t64, _ := strings.Cut(rest, ".")
	p, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		t.Fatalf("payload of %q: %v", tok, err)
	}
	tag, err := base64.RawURLEncoding.DecodeString(t64)
	if err != nil {
		t.Fatalf("tag of %q: %v", tok, err)
	}
	var claims struct {
		KID string `json:"kid"`
	}
	if err := json.Unmarshal(p, &claims); err != nil {
		t.Fatalf("claims of %q: %v", tok, err)
	}
	return claims.KID, tag
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
