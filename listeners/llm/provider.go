package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Provider sends one chat request over one provider's wire protocol. It does
// not retry: the Router does.
type Provider interface {
	Chat(ctx context.Context, r Request) (Reply, error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context, r Request) (Reply, error)

// Chat calls f.
func (f ProviderFunc) Chat(ctx context.Context, r Request) (Reply, error) { return f(ctx, r) }

// maxReplyBytes caps a provider's reply body (model output is untrusted).
const maxReplyBytes = 8 << 20

// httpClient is the part of *http.Client providers use.
type httpClient interface {
	Do(*http.Request) (*http.Response, error)
}

// endpoint is what every provider shares: where it posts, with which headers.
type endpoint struct {
	name    string
	url     string
	headers http.Header
	client  httpClient
}

// post sends body as JSON and returns the response when it is 2xx; other
// statuses become a *StatusError.
func (e *endpoint) post(ctx context.Context, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", e.name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.name, err)
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.name, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	se := &StatusError{Backend: e.name, Status: resp.StatusCode, Body: strings.TrimSpace(string(snippet)),
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		se.kind = ErrRateLimited
	case resp.StatusCode >= 500:
		se.kind = ErrServer
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		se.kind = ErrAuth
	default:
		se.kind = ErrRequest
	}
	return nil, se
}

// decode reads a whole JSON reply into v.
func (e *endpoint) decode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return fmt.Errorf("%s: read reply: %w", e.name, err)
	}
	if len(b) > maxReplyBytes {
		return fmt.Errorf("%s: %w: reply larger than %d bytes", e.name, ErrMalformed, maxReplyBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w: %w", e.name, ErrMalformed, err)
	}
	return nil
}

// lines calls fn with each line of a streamed reply (SSE or NDJSON) until fn
// returns false or the body ends.
func (e *endpoint) lines(resp *http.Response, fn func(line []byte) (bool, error)) error {
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxReplyBytes))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		more, err := fn(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w: %w", e.name, ErrMalformed, err)
		}
		if !more {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: read stream: %w", e.name, err)
	}
	return nil
}

// sseData returns the payload of an SSE "data:" line.
func sseData(line []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil, false
	}
	return bytes.TrimSpace(rest), true
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
