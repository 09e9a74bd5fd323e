package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// weatherOrganism writes an organism whose agent weather answers with a
// Weather (one string field, City, beside an integer TempC), the model's
// answer being content.
func weatherOrganism(t *testing.T, content string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test", "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	doc := fmt.Sprintf(`organism: {name: weatherly}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - name: weather
    agent: true
    description: Gives the weather
    prompt: You are weather.
    response:
      root: Weather
      fields:
        - {name: City}
        - {name: TempC, type: integer}
`, srv.URL)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAnswerWithOneStringFieldPrintsWhole: a structured answer whose only
// string field is not all it holds (a Weather's City beside its TempC)
// prints whole, as its XML, in process and over --connect alike — not as
// the City alone; a TempC of 0 is a temperature too.
func TestAnswerWithOneStringFieldPrintsWhole(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"below zero", `{"City":"Oslo","TempC":-3}`, "[weather] <Weather><City>Oslo</City><TempC>-3</TempC></Weather>\n"},
		{"at zero", `{"City":"Oslo","TempC":0}`, "[weather] <Weather><City>Oslo</City><TempC>0</TempC></Weather>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := weatherOrganism(t, tc.content)
			build := func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
			for _, be := range []struct {
				name    string
				backend func(t *testing.T) organism.Backend
			}{
				{"in process", func(t *testing.T) organism.Backend {
					l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir()}, build)
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Organism().Start(); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
					return l
				}},
				{"over --connect", func(t *testing.T) organism.Backend {
					b := startBusWith(t, build)
					return b.dial(t, "wendy", b.user(t, "wendy", auth.Operator))
				}},
			} {
				t.Run(be.name, func(t *testing.T) {
					c, err := console.New(be.backend(t), console.Config{ReplyTimeout: 60 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					var out strings.Builder
					if err := c.Run(context.Background(), strings.NewReader("@weather Oslo?\n"), &out); err != nil {
						t.Fatalf("run: %v\n%s", err, out.String())
					}
					if !strings.Contains(out.String(), tc.want) {
						t.Errorf("console lacks %q:\n%s", tc.want, out.String())
					}
				})
			}
		})
	}
}
