package oob

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/wasm/wasmtest"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

func TestListenerConfig(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		req  RegisterListener
		want config.Listener
		err  bool
	}{
		{"catalog", RegisterListener{Name: "printer", Class: "handlers.hello.ShoutedResponse",
			Handler: "handlers.hello.handle_response_print", Description: "prints", Broadcast: &yes, MaxConcurrent: 2},
			config.Listener{Name: "printer", PayloadClass: "handlers.hello.ShoutedResponse",
				Handler: "handlers.hello.handle_response_print", Description: "prints", Broadcast: true, MaxConcurrent: 2}, false},
		{"wasm", RegisterListener{Name: "calc", Class: "wasm", Handler: " tools/calc.wasm ", Description: "adds",
			Peers: &PeerList{Peers: []string{"shouter"}}},
			config.Listener{Name: "calc", Type: config.WasmListener, Module: "tools/calc.wasm", Description: "adds",
				Peers: []string{"shouter"}}, false},
		{"agent", RegisterListener{Name: "critic", Class: "Agent", Handler: "You are critic.", Description: "judges",
			IsAgent: &yes, MaxConcurrent: 3, Peers: &PeerList{Peers: []string{"poet"}}},
			config.Listener{Name: "critic", Agent: true, Prompt: "You are critic.", Description: "judges", MaxConcurrent: 3,
				Peers: []string{"poet"}}, false},
		{"agent without is-agent", RegisterListener{Name: "critic", Class: "agent", Handler: "who & style"},
			config.Listener{Name: "critic", Agent: true, Prompt: "who & style"}, false},
		{"agent that is not an agent", RegisterListener{Name: "critic", Class: "agent", Handler: "p", IsAgent: &no},
			config.Listener{}, true},
		{"agent without prompt", RegisterListener{Name: "critic", Class: "agent", Handler: "  "}, config.Listener{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := listenerConfig(&tt.req)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("listener (-want +got):\n%s", diff)
			}
			if got.YAMLAgent() != (tt.want.Agent && tt.want.Prompt != "") {
				t.Errorf("YAMLAgent() = %v", got.YAMLAgent())
			}
		})
	}
}

// organismDir writes organism.yaml with text into a new directory and
// returns the directory.
func organismDir(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "organism.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// answerOf injects payload to name from ops and returns the envelope of
// the answer that comes back on the new conversation.
func (f *fixture) answerOf(t *testing.T, name, payload string) string {
	t.Helper()
	replies := make(chan pump.Event, 64)
	cancel := f.org.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply || e.Kind == pump.EventHuh {
			select {
			case replies <- e:
			default:
			}
		}
	}))
	defer cancel()
	r := f.do(t, `<inject-message><to>`+name+`</to><from>ops</from><payload>`+payload+`</payload></inject-message>`)
	tc := r.Payload.ThreadCreated
	if tc == nil {
		t.Fatalf("inject to %s: %+v", name, r.Payload.Error)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-replies:
			if e.Conversation != tc.ThreadID {
				continue
			}
			if e.Kind == pump.EventHuh {
				t.Fatalf("%s answered <huh>: %s %v", name, e.Error, e.Diagnostics)
			}
			return string(e.Envelope)
		case <-deadline:
			t.Fatalf("%s did not answer", name)
		}
	}
}

// TestRegisterWasmListener: register-listener with class wasm loads the
// module named in handler from the organism's directory, the listener
// answers, unregister-listener removes it; paths outside the directory and
// files that are not modules are refused.
func TestRegisterWasmListener(t *testing.T) {
	guests := wasmtest.New(t.TempDir())
	calc := guests.Build(t, "calc", true)
	dir := organismDir(t, "organism: {name: oob-wasm}\n")
	b, err := os.ReadFile(calc)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tools/calc.wasm": b, "notes.txt": []byte("hello"), "fake.wasm": []byte("text")} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixtureFrom(t, filepath.Join(dir, "organism.yaml"), nil)

	refusals := []struct{ name, path string }{
		{"outside the organism's directory", calc},
		{"climbing out", "../outside.wasm"},
		{"not named .wasm", "notes.txt"},
		{"not a module", "fake.wasm"},
		{"missing", "tools/none.wasm"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, `<register-listener><name>calc</name><class>wasm</class><handler>`+tt.path+`</handler></register-listener>`)
			if code(r) != CodeInvalidArgument {
				t.Fatalf("code %q (%+v), want %s", code(r), r.Payload.Error, CodeInvalidArgument)
			}
		})
	}

	r := f.do(t, `<register-listener><name>calc</name><class>wasm</class><handler>tools/calc.wasm</handler>`+
		`<description>A calculator in WebAssembly</description></register-listener>`)
	if r.Payload.Ack == nil {
		t.Fatalf("register: %+v", r.Payload.Error)
	}
	var info *ListenerInfo
	for _, l := range f.do(t, `<list-listeners/>`).Payload.Listeners.Listeners {
		if l.Name == "calc" {
			info = &l
		}
	}
	if info == nil || info.Class != "wasm" || info.RootTag != "Calc" || info.Description != "A calculator in WebAssembly" {
		t.Fatalf("listed %+v", info)
	}
	if env := f.answerOf(t, "calc", `<Calc xmlns=""><A>2</A><B>40</B><Op>add</Op></Calc>`); !strings.Contains(env, "<Value>42</Value>") {
		t.Fatalf("answer %s", env)
	}
	if r := f.do(t, `<unregister-listener><name>calc</name></unregister-listener>`); r.Payload.Ack == nil {
		t.Fatalf("unregister: %+v", r.Payload.Error)
	}
	r = f.do(t, `<inject-message><to>calc</to><payload><Calc xmlns=""><A>1</A><B>1</B><Op>add</Op></Calc></payload></inject-message>`)
	if code(r) != CodeNotFound {
		t.Fatalf("inject after unregister: %q", code(r))
	}
	// Without an LLM backend an agent is refused as not supported.
	r = f.do(t, `<register-listener><name>critic</name><class>agent</class><handler>You are critic.</handler>`+
		`<is-agent>true</is-agent></register-listener>`)
	if code(r) != CodeNotSupported || !strings.Contains(r.Payload.Error.Details, "llm.backends") {
		t.Fatalf("agent without backend: %+v", r.Payload.Error)
	}
}

// chatModel is a loopback OpenAI-style chat server answering every request
// with answer and keeping the system prompts it was sent.
type chatModel struct {
	*httptest.Server
	answer  string
	mu      sync.Mutex
	prompts []string
}

func newChatModel(t *testing.T, answer string) *chatModel {
	m := &chatModel{answer: answer}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &body); err != nil || r.URL.Path != "/chat/completions" || len(body.Messages) < 2 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.prompts = append(m.prompts, body.Messages[1].Content)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": body.Model, "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": m.answer}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 5, "completion_tokens": 3}})
	}))
	t.Cleanup(m.Close)
	return m
}

// TestRegisterAgent: register-listener with class agent adds a YAML-style
// agent whose prompt is the handler text (or a prompt block it names); it
// answers through the configured LLM backend.
func TestRegisterAgent(t *testing.T) {
	m := newChatModel(t, "Too wet.")
	t.Setenv("OOB_TEST_LLM_KEY", "sk-test")
	dir := organismDir(t, `organism: {name: oob-agents}
llm:
  retries: 0
  backends:
    - {provider: openai, api_key_env: OOB_TEST_LLM_KEY, base_url: `+m.URL+`, model: gpt-test}
prompts:
  editor-block: You are editor.
`)
	f := newFixtureFrom(t, filepath.Join(dir, "organism.yaml"), nil)
	r := f.do(t, `<register-listener><name>critic</name><class>agent</class><handler>You are critic.</handler>`+
		`<description>Judges poems</description><is-agent>true</is-agent><max-concurrent>2</max-concurrent></register-listener>`)
	if r.Payload.Ack == nil {
		t.Fatalf("register: %+v", r.Payload.Error)
	}
	l, ok := f.org.Pump.Lookup("critic")
	if !ok || !l.Agent || l.Workers != 2 {
		t.Fatalf("registered %+v", l)
	}
	env := f.answerOf(t, "critic", `<`+l.Payload.Name()+` xmlns=""><Text>rain taps the roof</Text></`+l.Payload.Name()+`>`)
	if !strings.Contains(env, "Too wet.") {
		t.Fatalf("answer %s", env)
	}
	r = f.do(t, `<register-listener><name>editor</name><class>agent</class><handler>editor-block</handler>`+
		`<description>Edits</description></register-listener>`)
	if r.Payload.Ack == nil {
		t.Fatalf("register editor: %+v", r.Payload.Error)
	}
	ed, _ := f.org.Pump.Lookup("editor")
	f.answerOf(t, "editor", `<`+ed.Payload.Name()+` xmlns=""><Text>fix this</Text></`+ed.Payload.Name()+`>`)
	m.mu.Lock()
	prompts := append([]string(nil), m.prompts...)
	m.mu.Unlock()
	if diff := cmp.Diff([]string{"You are critic.", "You are editor."}, prompts); diff != "" {
		t.Errorf("system prompts (-want +got):\n%s", diff)
	}
	// is-agent false contradicts class agent.
	r = f.do(t, `<register-listener><name>x</name><class>agent</class><handler>p</handler><is-agent>false</is-agent></register-listener>`)
	if code(r) != CodeInvalidArgument || !strings.Contains(r.Payload.Error.Details, errNotAgent.Error()) {
		t.Fatalf("is-agent false: %+v", r.Payload.Error)
	}
}
