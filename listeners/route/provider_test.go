package route

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// embedServer is a loopback embeddings endpoint: it checks each request
// against the provider's wire shape and answers with reply(request).
type embedServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []embedRequest
}

type embedRequest struct {
	Path, Auth string
	Body       map[string]any
}

func newEmbedServer(t *testing.T, reply func(w http.ResponseWriter, body map[string]any)) *embedServer {
	t.Helper()
	s := &embedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &body) != nil {
			t.Errorf("bad request: %s %s %q: %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"), b)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, embedRequest{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
		s.mu.Unlock()
		reply(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *embedServer) requests() []embedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]embedRequest(nil), s.reqs...)
}

func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func respond(status int, body []byte, contentType string) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, _ map[string]any) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// Both providers speak their recorded wire shapes: the request body is the
// recorded request, the recorded reply gives the vectors in input order
// (openai's data may come in any order: its index says which).
func TestProvidersWire(t *testing.T) {
	want := [][]float32{{-0.0061, 0.0342, -0.0712, 0.0205}, {0.0123, -0.0456, 0.0789, 0.1011}}
	for _, tc := range []struct {
		name, model, path, request, reply string
		build                             func(ProviderConfig) (Embedder, error)
	}{
		{"openai", "text-embedding-3-small", "/v1/embeddings", "openai_embeddings_request.json", "openai_embeddings_reply.json", NewOpenAI},
		{"ollama", "nomic-embed-text", "/api/embed", "ollama_embed_request.json", "ollama_embed_reply.json", NewOllama},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEmbedServer(t, respond(200, recorded(t, tc.reply), "application/json"))
			base := s.URL
			if tc.name == "openai" {
				base += "/v1"
			}
			e, err := tc.build(ProviderConfig{BaseURL: base, Model: tc.model, APIKey: "sk-test", Client: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			vs, err := e.Embed(context.Background(), []string{"first text", "second text"})
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != 2 || !reflect.DeepEqual(vs[0].Dense, want[0]) || !reflect.DeepEqual(vs[1].Dense, want[1]) {
				t.Fatalf("vectors = %v", vs)
			}
			reqs := s.requests()
			if len(reqs) != 1 || reqs[0].Path != tc.path || reqs[0].Auth != "Bearer sk-test" {
				t.Fatalf("requests: %+v", reqs)
			}
			if !reflect.DeepEqual(reqs[0].Body, jsonOf(t, recorded(t, tc.request))) {
				t.Fatalf("request body %v, want the recorded %s", reqs[0].Body, tc.request)
			}
		})
	}
}

// Texts go in batches; vectors come back in order.
func TestProviderBatches(t *testing.T) {
	s := newEmbedServer(t, func(w http.ResponseWriter, body map[string]any) {
		in, _ := body["input"].([]any)
		var data []any
		for i := len(in) - 1; i >= 0; i-- { // reversed: the index orders them
			text, _ := in[i].(string)
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": []float64{float64(len(text)), 1}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m"})
	})
	e, err := NewOpenAI(ProviderConfig{BaseURL: s.URL, Model: "m", BatchSize: 2, Client: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v.Dense[0] != float32(len(texts[i])) {
			t.Fatalf("vector %d = %v", i, v.Dense)
		}
	}
	if n := len(s.requests()); n != 3 {
		t.Fatalf("%d requests for 5 texts in batches of 2, want 3", n)
	}
	if s.requests()[0].Auth != "" {
		t.Fatalf("an Authorization header without a key")
	}
}

// What an endpoint answers instead of vectors is an error saying what it
// was, wrapping ErrEmbedding; nothing panics.
func TestProviderFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ollama   bool
		status   int
		body     string
		ctype    string
		says     string
		hasEmbed bool
	}{
		{"openai 401", false, 401, string(recorded(t, "openai_error_401.json")), "application/json", "HTTP 401: Incorrect API key provided", false},
		{"ollama 404", true, 404, string(recorded(t, "ollama_error_404.json")), "application/json", `HTTP 404: model "nomic-embed-text" not found`, false},
		{"html page", false, 200, "<!DOCTYPE html><html>login</html>", "text/html", "not JSON (HTTP 200, text/html", false},
		{"empty 502", false, 502, "", "text/plain", "HTTP 502: (empty body)", false},
		{"too few", false, 200, `{"data":[{"index":0,"embedding":[1]}]}`, "application/json", "1 embeddings for 2 inputs", false},
		{"repeated index", false, 200, `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, "application/json", "repeated", false},
		{"no index", false, 200, `{"data":[{"embedding":[1]},{"embedding":[1]}]}`, "application/json", "missing", false},
		{"empty vector", true, 200, `{"embeddings":[[],[1]]}`, "application/json", "empty embedding", false},
		{"mixed dims", true, 200, `{"embeddings":[[1,2],[1]]}`, "application/json", "dimensions", false},
		{"not numbers", true, 200, `{"embeddings":[["a"],[1]]}`, "application/json", "malformed reply", false},
		{"overflow", true, 200, `{"embeddings":[[1e300],[1]]}`, "application/json", "malformed reply", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEmbedServer(t, respond(tc.status, []byte(tc.body), tc.ctype))
			build := NewOpenAI
			if tc.ollama {
				build = NewOllama
			}
			e, err := build(ProviderConfig{BaseURL: s.URL, Model: "m", Client: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, ErrEmbedding) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want one saying %q", err, tc.says)
			}
		})
	}
	// A server that is gone.
	s := newEmbedServer(t, respond(200, nil, "application/json"))
	url := s.URL
	s.Close()
	e, _ := NewOllama(ProviderConfig{BaseURL: url, Model: "m"})
	if _, err := e.Embed(context.Background(), []string{"a"}); !errors.Is(err, ErrEmbedding) {
		t.Fatalf("unreachable: %v", err)
	}
	if _, err := NewOpenAI(ProviderConfig{Model: "m", BaseURL: "ftp://x"}); err == nil {
		t.Fatal("an ftp base_url was accepted")
	}
	if _, err := NewOllama(ProviderConfig{}); err == nil {
		t.Fatal("no model was accepted")
	}
}

// A router on an embeddings API ranks with its vectors and embeds each
// description once: a rebuild after a change sends only the new ones.
func TestRouterOnProvider(t *testing.T) {
	var mu sync.Mutex
	embedded := 0
	s := newEmbedServer(t, func(w http.ResponseWriter, body map[string]any) {
		in, _ := body["input"].([]any)
		var out [][]float32
		for _, x := range in {
			text, _ := x.(string)
			out = append(out, pseudoVector(strings.ToLower(text), 16).Dense)
		}
		mu.Lock()
		embedded += len(in)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "m", "embeddings": out})
	})
	e, err := NewOllama(ProviderConfig{BaseURL: s.URL, Model: "m", Client: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	caps := shipped(t)
	src := &source{}
	src.set(caps[:5])
	r := newRouter(t, Config{Source: src, Embedder: e})
	// The need is the exact document of one capability: its vector is the
	// same, so it ranks first with a score of 1.
	want := caps[2]
	cs, err := r.Rank(context.Background(), Document(want), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 || cs[0].Name != want.Name || cs[0].Score < 0.999 {
		t.Fatalf("rank = %v", cs)
	}
	mu.Lock()
	if embedded != 6 { // five descriptions, one need
		t.Fatalf("embedded %d texts, want 6", embedded)
	}
	embedded = 0
	mu.Unlock()
	src.set(caps[:6])
	if _, err := r.Rank(context.Background(), "x", nil, 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if embedded != 2 { // the one new description, the need
		t.Fatalf("embedded %d texts after adding one capability, want 2", embedded)
	}
}
