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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// forecastOrganism writes an organism whose agent weather has a structured
// output contract (response: Forecast), answered by a loopback model.
func forecastOrganism(t *testing.T) string { return heldForecastOrganism(t, nil) }

// heldForecastOrganism is forecastOrganism whose model answers only once
// hold is closed (nil: at once).
func heldForecastOrganism(t *testing.T, hold <-chan struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test", "choices": []any{map[string]any{
			"message":       map[string]any{"role": "assistant", "content": `{"City":"Oslo","TempC":-3,"Note":"dry"}`},
			"finish_reason": "stop"}}, "usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	doc := fmt.Sprintf(`organism: {name: forecast}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: %s, model: gpt-test}
listeners:
  - name: weather
    agent: true
    description: Gives forecasts
    prompt: You are weather.
    response:
      root: Forecast
      fields:
        - {name: City}
        - {name: TempC, type: integer}
        - {name: Note, optional: true}
`, srv.URL)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// threadLine is a thread's heading in /monitor.
var threadLine = regexp.MustCompile(`--- Thread ([0-9a-f]+) ---`)

// TestStructuredAnswerHasNoEmptyXMLNS: a structured answer (a Forecast)
// shows in the console as its payload XML without the xmlns="" it carries
// only inside an envelope, in process and over --connect alike: as the
// answer, and in /buffer.
func TestStructuredAnswerHasNoEmptyXMLNS(t *testing.T) {
	const want = "[weather] <Forecast><City>Oslo</City><TempC>-3</TempC><Note>dry</Note></Forecast>"
	path := forecastOrganism(t)
	build := func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) }
	tests := []struct {
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.backend(t)
			run := func(input string) string {
				t.Helper()
				c, err := console.New(b, console.Config{ReplyTimeout: 60 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				var out strings.Builder
				if err := c.Run(context.Background(), strings.NewReader(input), &out); err != nil {
					t.Fatalf("run: %v\n%s", err, out.String())
				}
				return out.String()
			}
			out := run("@weather Oslo?\n/monitor *\n")
			if !strings.Contains(out, want+"\n") {
				t.Errorf("console lacks %q:\n%s", want, out)
			}
			// /buffer shows the conversation's messages, the Forecast too.
			var input strings.Builder
			for _, m := range threadLine.FindAllStringSubmatch(out, -1) {
				input.WriteString("/buffer " + m[1] + "\n")
			}
			out += run(input.String())
			if !strings.Contains(out, "<Forecast><City>Oslo</City>") || strings.Contains(out, `xmlns=""`) {
				t.Errorf("the Forecast shows with xmlns=\"\" (or not at all):\n%s", out)
			}
		})
	}
}

// TestLiveBufferHasNoEmptyXMLNS: /buffer of a thread still running in an
// organism without a journal reads the context buffer, whose payloads
// carry the envelope's xmlns=""; it shows them as a person reads them.
func TestLiveBufferHasNoEmptyXMLNS(t *testing.T) {
	hold := make(chan struct{})
	path := heldForecastOrganism(t, hold)
	l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load(path, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Organism().Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Organism().Shutdown(context.Background()) })
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release()
	in, out, done := interactive(t, l)
	fmt.Fprintln(in, "@weather Oslo?")
	fmt.Fprintln(in, "/monitor *")
	id := out.waitFor(t, regexp.MustCompile(`--- Thread ([0-9a-f]+) ---\n  \[console -> weather\]`))[1]
	fmt.Fprintln(in, "/buffer "+id)
	out.waitFor(t, regexp.MustCompile(`\[0\] console -> weather: WeatherTask\n    <WeatherTask`))
	if strings.Contains(out.String(), `xmlns=""`) {
		t.Errorf("/buffer shows xmlns=\"\":\n%s", out)
	}
	release()
	out.waitFor(t, regexp.MustCompile(`\[weather\] <Forecast>`))
	fmt.Fprintln(in, "/quit")
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
}
