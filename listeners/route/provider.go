package route

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// ProviderConfig configures an embeddings endpoint (NewOpenAI, NewOllama).
type ProviderConfig struct {
	// BaseURL is the API's base: for openai https://api.openai.com/v1 (the
	// default; requests go to BaseURL/embeddings — any OpenAI-compatible
	// server works), for ollama http://localhost:11434 (the default;
	// requests go to BaseURL/api/embed).
	BaseURL string
	// Model is the embedding model (required).
	Model string
	// APIKey is sent as "Authorization: Bearer …" (none when empty).
	APIKey string
	// Timeout bounds one request (default 30s).
	Timeout time.Duration
	// BatchSize is how many texts one request carries (default 128).
	BatchSize int
	// Client sends the requests (default: a client with Timeout).
	Client *http.Client
}

// Limits on what an embeddings endpoint may send (its reply is untrusted).
const (
	// maxEmbedReplyBytes caps one reply body.
	maxEmbedReplyBytes = 32 << 20
	// maxDimensions caps a vector's length.
	maxDimensions = 1 << 16
)

// ProviderError is an embeddings endpoint's failure: an HTTP status other
// than 2xx, or a reply that is not its protocol.
type ProviderError struct {
	// Provider is openai or ollama.
	Provider string
	// Status is the HTTP status (0: the reply was not readable).
	Status int
	// Msg says what was wrong: the provider's own message, or what the
	// reply was instead.
	Msg string
}

// Error renders "openai embeddings: HTTP 401: Incorrect API key provided".
func (e *ProviderError) Error() string {
	if e.Status != 0 && e.Status/100 != 2 {
		return fmt.Sprintf("%s embeddings: HTTP %d: %s", e.Provider, e.Status, e.Msg)
	}
	return fmt.Sprintf("%s embeddings: %s", e.Provider, e.Msg)
}

// Unwrap returns ErrEmbedding.
func (e *ProviderError) Unwrap() error { return ErrEmbedding }

// httpEmbedder speaks one provider's embeddings protocol.
type httpEmbedder struct {
	provider string
	url      string
	cfg      ProviderConfig
	client   *http.Client
	// request builds the body for a batch; decode reads the vectors of n
	// texts from a reply.
	request func(model string, texts []string) any
	decode  func(body []byte, n int) ([][]float32, error)
}

// NewOpenAI returns the embedder of an OpenAI embeddings endpoint (POST
// {base_url}/embeddings, {"model", "input": [...], "encoding_format":
// "float"} → {"data": [{"index", "embedding"}], …}).
func NewOpenAI(c ProviderConfig) (Embedder, error) {
	e, err := newHTTPEmbedder("openai", "https://api.openai.com/v1", "/embeddings", c)
	if err != nil {
		return nil, err
	}
	e.request = func(model string, texts []string) any {
		return map[string]any{"model": model, "input": texts, "encoding_format": "float"}
	}
	e.decode = decodeOpenAI
	return e, nil
}

// NewOllama returns the embedder of an Ollama server (POST
// {base_url}/api/embed, {"model", "input": [...]} → {"embeddings":
// [[...], …], …}).
func NewOllama(c ProviderConfig) (Embedder, error) {
	e, err := newHTTPEmbedder("ollama", "http://localhost:11434", "/api/embed", c)
	if err != nil {
		return nil, err
	}
	e.request = func(model string, texts []string) any {
		return map[string]any{"model": model, "input": texts}
	}
	e.decode = decodeOllama
	return e, nil
}

func newHTTPEmbedder(provider, defaultBase, path string, c ProviderConfig) (*httpEmbedder, error) {
	if strings.TrimSpace(c.Model) == "" {
		return nil, fmt.Errorf("route: %s embeddings: no model", provider)
	}
	if c.BaseURL == "" {
		c.BaseURL = defaultBase
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("route: %s embeddings: base_url: want an http:// or https:// URL without query or fragment, got %q", provider, c.BaseURL)
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 128
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: c.Timeout}
	}
	return &httpEmbedder{provider: provider, url: strings.TrimRight(c.BaseURL, "/") + path, cfg: c, client: client}, nil
}

// Embed sends texts in batches and returns their vectors in order.
func (e *httpEmbedder) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	out := make([]Vector, 0, len(texts))
	dim := -1
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		batch := texts[start:min(start+e.cfg.BatchSize, len(texts))]
		vs, err := e.post(ctx, batch)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if dim >= 0 && len(v) != dim {
				return nil, &ProviderError{Provider: e.provider, Status: 200,
					Msg: fmt.Sprintf("malformed reply: vectors of %d and %d dimensions", dim, len(v))}
			}
			dim = len(v)
			out = append(out, Vector{Dense: v})
		}
	}
	return out, nil
}

// post sends one batch.
func (e *httpEmbedder) post(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(e.request(e.cfg.Model, texts))
	if err != nil {
		return nil, fmt.Errorf("route: %s embeddings: encode request: %w", e.provider, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("route: %s embeddings: %w", e.provider, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("route: %s embeddings: %w: %w", e.provider, ErrEmbedding, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedReplyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("route: %s embeddings: read reply: %w: %w", e.provider, ErrEmbedding, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &ProviderError{Provider: e.provider, Status: resp.StatusCode, Msg: errorText(raw)}
	}
	if len(raw) > maxEmbedReplyBytes {
		return nil, &ProviderError{Provider: e.provider, Status: resp.StatusCode,
			Msg: fmt.Sprintf("malformed reply: larger than %d bytes", maxEmbedReplyBytes)}
	}
	if !json.Valid(raw) {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		return nil, &ProviderError{Provider: e.provider, Status: resp.StatusCode,
			Msg: fmt.Sprintf("malformed reply: not JSON (HTTP %d, %s, body starts %q)", resp.StatusCode, ct, excerpt(raw))}
	}
	vs, err := e.decode(raw, len(texts))
	if err != nil {
		return nil, &ProviderError{Provider: e.provider, Status: resp.StatusCode, Msg: "malformed reply: " + err.Error()}
	}
	return vs, nil
}

// decodeOpenAI reads {"data": [{"index": i, "embedding": [...]}, …]}: one
// vector per text, each index once.
func decodeOpenAI(body []byte, n int) ([][]float32, error) {
	var r struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(r.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range r.Data {
		if d.Index == nil || *d.Index < 0 || *d.Index >= n || out[*d.Index] != nil {
			return nil, errors.New("an embedding's index is missing, out of range or repeated")
		}
		if err := checkVector(d.Embedding); err != nil {
			return nil, err
		}
		out[*d.Index] = d.Embedding
	}
	return out, nil
}

// decodeOllama reads {"embeddings": [[...], …]}: one vector per text, in
// order.
func decodeOllama(body []byte, n int) ([][]float32, error) {
	var r struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if len(r.Embeddings) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(r.Embeddings), n)
	}
	for _, v := range r.Embeddings {
		if err := checkVector(v); err != nil {
			return nil, err
		}
	}
	return r.Embeddings, nil
}

func checkVector(v []float32) error {
	switch {
	case len(v) == 0:
		return errors.New("an empty embedding")
	case len(v) > maxDimensions:
		return fmt.Errorf("an embedding of %d dimensions (at most %d)", len(v), maxDimensions)
	}
	return nil
}

// errorText is the message of an error reply: openai's
// {"error": {"message": …}}, ollama's {"error": "…"}, else the body's
// first bytes.
func errorText(raw []byte) string {
	var obj struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &obj) == nil && len(obj.Error) > 0 {
		var s string
		if json.Unmarshal(obj.Error, &s) == nil && s != "" {
			return s
		}
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(obj.Error, &m) == nil && m.Message != "" {
			return m.Message
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "(empty body)"
	}
	return excerpt(raw)
}

// excerpt is the start of a body for messages.
func excerpt(b []byte) string {
	const n = 120
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
