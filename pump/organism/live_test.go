package organism

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/listeners/wasm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// copyFile copies src to dst (creating dst's directory).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// liveOrganism starts an organism from an organism.yaml written in a new
// directory (returned), with no listener of its own.
func liveOrganism(t *testing.T) (*Organism, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "organism.yaml")
	if err := os.WriteFile(path, []byte("organism: {name: live}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{WasmCache: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return o, dir
}

// calcAnswer sends a Calc to name and returns the event that ends it.
func calcAnswer(t *testing.T, o *Organism, name string) pump.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := make(collector, 64)
	env := stage.AppendEnvelope(nil, "tester", name, stage.NewThreadID(),
		[]byte(`<Calc xmlns=""><A>2</A><B>40</B><Op>add</Op></Calc>`))
	if _, err := o.Pump.InjectWait(ctx, env, c); err != nil {
		t.Fatalf("inject to %s: %v", name, err)
	}
	return c.await(t, pump.EventReply, pump.EventHuh, pump.EventDeadLetter)
}

func TestAddWasmListenerWhileRunning(t *testing.T) {
	o, dir := liveOrganism(t)
	copyFile(t, guestPath(t, "calc"), filepath.Join(dir, "tools", "calc.wasm"))
	lc := config.Listener{Name: "calc", Type: config.WasmListener, Module: "tools/calc.wasm",
		Description: "A calculator added while running", MaxConcurrent: 2}
	if err := o.AddListener(lc); err != nil {
		t.Fatal(err)
	}
	l, ok := o.Pump.Lookup("calc")
	if !ok || l.Payload.Name() != "Calc" || l.Workers != 2 || l.Description != lc.Description {
		t.Fatalf("registered %+v (ok %v)", l, ok)
	}
	e := calcAnswer(t, o, "calc")
	if e.Kind != pump.EventReply || !strings.Contains(string(e.Envelope), "<Value>42</Value>") {
		t.Fatalf("answer: %s %s %s", e.Kind, e.Error, e.Envelope)
	}
	mod := l.Handler.(*wasm.Listener).Module()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.RemoveListener(ctx, "calc"); err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Call(ctx, []byte(`<Calc><A>1</A><B>1</B><Op>add</Op></Calc>`)); !errors.Is(err, wasm.ErrClosed) {
		t.Fatalf("the removed listener's module still runs: err = %v", err)
	}
	if n := len(o.wasm.byName); n != 0 {
		t.Fatalf("%d modules still held", n)
	}
	// The name is free again; a second registration under it works.
	if err := o.AddListener(lc); err != nil {
		t.Fatal(err)
	}
	if e := calcAnswer(t, o, "calc"); e.Kind != pump.EventReply {
		t.Fatalf("answer after re-adding: %s %s", e.Kind, e.Envelope)
	}
	// A refused registration (the name is taken) leaves no module behind.
	if err := o.AddListener(lc); err == nil {
		t.Fatal("a second calc was accepted")
	}
	if n := len(o.wasm.byName); n != 1 {
		t.Fatalf("%d modules held, want 1", n)
	}
}

func TestAddWasmListenerConfined(t *testing.T) {
	o, dir := liveOrganism(t)
	outside := guestPath(t, "calc") // built outside the organism's directory
	copyFile(t, outside, filepath.Join(dir, "calc.wasm"))
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("notes.txt", "hello")
	write("fake.wasm", "not a module")
	if err := os.Mkdir(filepath.Join(dir, "dir.wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.wasm")); err != nil {
		t.Fatal(err)
	}
	xsdOutside := filepath.Join(t.TempDir(), "calc.xsd")
	if err := os.WriteFile(xsdOutside, []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>`), 0o600); err != nil {
		t.Fatal(err)
	}
	climb, err := filepath.Rel(dir, outside)
	if err != nil || !strings.HasPrefix(climb, "..") {
		t.Fatalf("cannot climb from %s to %s: %q %v", dir, outside, climb, err)
	}
	tests := []struct {
		name   string
		module string
		xsd    string
		dir    string
		want   error
	}{
		{"absolute path outside", outside, "", "", ErrOutsideOrganism},
		{"relative path climbing out", climb, "", "", ErrOutsideOrganism},
		{"relative path to nothing outside", "../nothing.wasm", "", "", ErrOutsideOrganism},
		{"symbolic link pointing out", "link.wasm", "", "", ErrOutsideOrganism},
		{"xsd outside", "calc.wasm", xsdOutside, "", ErrOutsideOrganism},
		{"capabilities.dir outside", "calc.wasm", "", filepath.Dir(outside), ErrOutsideOrganism},
		{"not named .wasm", "notes.txt", "", "", ErrNotModule},
		{"a directory", "dir.wasm", "", "", ErrNotModule},
		{"not a module", "fake.wasm", "", "", ErrNotModule},
		{"no module", "", "", "", ErrNotModule},
		{"missing file", "nope.wasm", "", "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := config.Listener{Name: "calc", Type: config.WasmListener, Module: tt.module, XSD: tt.xsd,
				Capabilities: config.Capabilities{Dir: tt.dir}, Description: "refused"}
			err := o.AddListener(lc)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if _, ok := o.Pump.Lookup("calc"); ok {
				t.Fatal("registered anyway")
			}
		})
	}
	// The same module inside the directory is accepted.
	if err := o.AddListener(config.Listener{Name: "calc", Type: config.WasmListener, Module: "calc.wasm",
		Description: "accepted"}); err != nil {
		t.Fatal(err)
	}
}

func TestAddYAMLAgentWhileRunning(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"critic": {"Too wet."},
		"editor": {"Edited."},
	})
	o := agentOrganism(t, m, `prompts:
  editor-block: You are editor.
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
`)
	if err := o.AddListener(config.Listener{Name: "critic", Agent: true, Description: "Judges poems",
		Prompt: "You are critic. Be brief.", Peers: []string{"poet"}, MaxConcurrent: 3}); err != nil {
		t.Fatal(err)
	}
	l, ok := o.Pump.Lookup("critic")
	if !ok || !l.Agent || l.Workers != 3 || l.Payload.Name() != "CriticTask" {
		t.Fatalf("registered %+v (ok %v)", l, ok)
	}
	if diff := cmp.Diff([]string{"poet"}, l.Peers); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	if got := ask(t, o, "critic", "judge: rain taps the roof"); got != "Too wet." {
		t.Fatalf("reply %q", got)
	}
	reqs := m.requests("critic")
	if len(reqs) != 1 || reqs[0].Messages[1]["content"] != "You are critic. Be brief." || reqs[0].Body["model"] != "gpt-test" {
		t.Fatalf("requests %+v", reqs)
	}
	// Peers must name what the organism has, as organism.yaml's must: a
	// listener added while running (critic) counts, a ghost does not.
	err := o.AddListener(config.Listener{Name: "ghostly", Agent: true, Description: "x", Prompt: "You are ghostly.",
		Peers: []string{"critic", "ghost"}})
	if !errors.Is(err, pump.ErrUnknownListener) || !strings.Contains(err.Error(), `"ghost" names no listener or gateway`) {
		t.Fatalf("a peer naming nothing: %v", err)
	}
	if _, ok := o.Pump.Lookup("ghostly"); ok {
		t.Fatal("the listener naming a ghost peer was added")
	}
	// A prompt naming a block of the prompts: section gets the block's text.
	if err := o.AddListener(config.Listener{Name: "editor", Agent: true, Description: "Edits",
		Prompt: "editor-block", Peers: []string{"critic", "editor"}}); err != nil {
		t.Fatal(err)
	}
	if got := ask(t, o, "editor", "fix this"); got != "Edited." {
		t.Fatalf("reply %q", got)
	}
	if got := m.requests("editor")[0].Messages[1]["content"]; got != "You are editor." {
		t.Errorf("prompt %q", got)
	}
	// The backend's base_url is a server of its own (OpenAI-compatible), so
	// it serves any model name (TestAddYAMLAgentUnservedModel: refusals).
	if err := o.AddListener(config.Listener{Name: "local", Agent: true, Description: "x", Prompt: "You are local.",
		Model: "Qwen/Qwen2.5-7B-Instruct"}); err != nil {
		t.Fatalf("any model on a base_url backend: %v", err)
	}
}

func TestAddYAMLAgentUnservedModel(t *testing.T) {
	t.Setenv("TEST_LLM_KEY", "sk-test")
	path := filepath.Join(t.TempDir(), "organism.yaml")
	doc := `organism: {name: narrow}
llm:
  backends:
    - {provider: openai, api_key_env: TEST_LLM_KEY, base_url: "http://127.0.0.1:9/v1", supported_models: [gpt-test]}
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	// supported_models narrows the backend: a model outside it is refused.
	err = o.AddListener(config.Listener{Name: "other", Agent: true, Description: "x", Prompt: "You are other.",
		Model: "claude-none"})
	if !errors.Is(err, ErrNoLLM) {
		t.Fatalf("unserved model: err = %v", err)
	}
}

func TestAddYAMLAgentWithoutBackend(t *testing.T) {
	t.Setenv("UNSET_TEST_LLM_KEY", "")
	tests := []struct {
		name, yaml, hint string
	}{
		{"no backend", "organism: {name: nollm}\n", "add a backend under llm.backends and reload"},
		{"key unset", `organism: {name: nollm}
llm:
  backends:
    - {provider: openai, api_key_env: UNSET_TEST_LLM_KEY, model: gpt-test}
`, "set UNSET_TEST_LLM_KEY (in the environment or the .env beside organism.yaml) and reload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "organism.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			o, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Start(); err != nil {
				t.Fatal(err)
			}
			defer o.Shutdown(context.Background())
			err = o.AddListener(config.Listener{Name: "critic", Agent: true, Description: "Judges", Prompt: "You are critic."})
			if !errors.Is(err, ErrNoLLM) || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), tt.hint) {
				t.Fatalf("err = %v, want ErrNoLLM naming %s", err, tt.hint)
			}
			if _, ok := o.Pump.Lookup("critic"); ok {
				t.Fatal("registered anyway")
			}
		})
	}
}

func TestWasmSetClosesModulesAddedAfterClose(t *testing.T) {
	copyDir := t.TempDir()
	copyFile(t, guestPath(t, "calc"), filepath.Join(copyDir, "calc.wasm"))
	ws := newWasmSet(Options{WasmCache: wasmCache}, nil)
	l, err := ws.open(nil, catalog.Env{}, config.Listener{Name: "calc", Type: config.WasmListener,
		Module: filepath.Join(copyDir, "calc.wasm")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A registration that raced the shutdown: its module is closed at once.
	if err := ws.add("calc", l); !errors.Is(err, pump.ErrClosed) {
		t.Fatalf("add after close: err = %v", err)
	}
	if _, err := l.Module().Call(context.Background(), []byte(`<Calc/>`)); !errors.Is(err, wasm.ErrClosed) {
		t.Fatalf("module still runs: err = %v", err)
	}
}
