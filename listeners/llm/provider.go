package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Provider sends one chat request over one provider's wire protocol. It does
// not retry: the Router does. Its errors do not name the backend or the
// model (the Router's CallError does, once).
type Provider interface {
	Chat(ctx context.Context, r Request) (Reply, error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context, r Request) (Reply, error)

// Chat calls f.
func (f ProviderFunc) Chat(ctx context.Context, r Request) (Reply, error) { return f(ctx, r) }

// Limits on what a provider may send (model output is untrusted).
const (
	// maxReplyBytes caps a provider's reply body, streamed or not.
	maxReplyBytes = 8 << 20
	// maxLineBytes caps one line of a streamed reply.
	maxLineBytes = 1 << 20
	// headBytes is how much of a reply is kept to quote in errors.
	headBytes = 256
)

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

// post sends body as JSON and returns the reply when it is 2xx; other
// statuses become a *StatusError.
func (e *endpoint) post(ctx context.Context, body any) (*replyBody, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return newReplyBody(resp), nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	se := &StatusError{Backend: e.name, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
		Body: errorMessage(raw), RetryAfter: retryAfterOf(resp.Header)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests && quotaExhausted(raw):
		se.kind = ErrQuota
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

// errorMessage returns the message of an error body: the provider's own
// when it is JSON the way one of them writes errors ({"error":{"type",
// "message"}}, {"error":"…"}, {"message":"…"}), else the body's start.
func errorMessage(raw []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			if inner.Type != "" {
				return excerpt([]byte(inner.Type), 64) + ": " + excerpt([]byte(inner.Message), excerptBytes)
			}
			return excerpt([]byte(inner.Message), excerptBytes)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return excerpt([]byte(s), excerptBytes)
		case v.Message != "":
			return excerpt([]byte(v.Message), excerptBytes)
		}
	}
	return excerpt(raw, excerptBytes)
}

// quotaType is OpenAI's error type and code of a 429 for an account out of
// credit ("You exceeded your current quota, please check your plan and
// billing details.").
const quotaType = "insufficient_quota"

// quotaExhausted reports whether an error body says the account is out of
// quota: {"error":{"type":"insufficient_quota"}} or its code so.
func quotaExhausted(raw []byte) bool {
	var v struct {
		Error struct {
			Type string          `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var code string
	_ = json.Unmarshal(v.Error.Code, &code)
	return v.Error.Type == quotaType || code == quotaType
}

// replyBody is a 2xx reply being read. It caps the bytes read and keeps the
// first ones, so that a reply that is not what the protocol says can be
// reported as what it is.
type replyBody struct {
	status      int
	contentType string
	mediaType   string
	body        io.ReadCloser
	head        []byte
	n           int
}

// errReplyTooLarge stops a reply past maxReplyBytes.
var errReplyTooLarge = fmt.Errorf("reply larger than %d bytes", maxReplyBytes)

func newReplyBody(resp *http.Response) *replyBody {
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	return &replyBody{status: resp.StatusCode, contentType: ct, mediaType: strings.ToLower(mt), body: resp.Body}
}

// Read implements io.Reader over the capped body.
func (rb *replyBody) Read(p []byte) (int, error) {
	if rb.n >= maxReplyBytes {
		return 0, errReplyTooLarge
	}
	if len(p) > maxReplyBytes-rb.n {
		p = p[:maxReplyBytes-rb.n]
	}
	n, err := rb.body.Read(p)
	rb.n += n
	if keep := min(n, headBytes-len(rb.head)); keep > 0 {
		rb.head = append(rb.head, p[:keep]...)
	}
	return n, err
}

// Close closes the body.
func (rb *replyBody) Close() error { return rb.body.Close() }

// malformed reports the reply as not the protocol, for reason, quoting the
// bytes read so far (it reads no more: the server may be stalling).
func (rb *replyBody) malformed(format string, a ...any) *ReplyError {
	return &ReplyError{Status: rb.status, ContentType: rb.contentType, Reason: fmt.Sprintf(format, a...),
		Start: excerpt(rb.head, excerptBytes)}
}

// peek reads the start of the body (up to excerptBytes) so that a reply
// refused on its content type can be quoted.
func (rb *replyBody) peek() {
	if n := excerptBytes - len(rb.head); n > 0 {
		_, _ = io.ReadFull(rb, make([]byte, n))
	}
}

// html reports whether the reply is a web page (a proxy's or a login
// page), which no model API sends.
func (rb *replyBody) html() bool {
	return rb.mediaType == "text/html" || rb.mediaType == "application/xhtml+xml"
}

// json reports whether the reply says it is one JSON document.
func (rb *replyBody) json() bool {
	return rb.mediaType == "application/json" || strings.HasSuffix(rb.mediaType, "+json")
}

// readError classifies an error met reading the body.
func (rb *replyBody) readError(err error) error {
	switch {
	case errors.Is(err, errReplyTooLarge):
		return rb.malformed("%v", err)
	case errors.Is(err, bufio.ErrTooLong):
		return rb.malformed("a stream line longer than %d bytes", maxLineBytes)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return rb.malformed("reply cut off: %v", err)
	}
	return fmt.Errorf("read reply: %w", err)
}

// decode reads a whole JSON reply into v.
func (rb *replyBody) decode(v any) error {
	defer rb.Close()
	b, err := io.ReadAll(rb)
	if err != nil {
		return rb.readError(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		if rb.html() {
			return rb.malformed("an HTML page, not JSON")
		}
		return rb.malformed("not JSON the provider's way: %v", err)
	}
	return nil
}

// events calls fn with each server-sent event (its event name, "" when
// none, and its data: the data lines joined by newlines) until fn returns
// false, fails or the body ends. data is only valid during the call.
func (rb *replyBody) events(fn func(event string, data []byte) (more bool, err error)) error {
	defer rb.Close()
	if rb.html() {
		rb.peek()
		return rb.malformed("an HTML page, not an event stream")
	}
	sc := bufio.NewScanner(rb)
	sc.Buffer(make([]byte, 0, 4<<10), maxLineBytes)
	var (
		event string
		data  []byte
		lines int // data lines of the pending event
	)
	dispatch := func() (bool, error) {
		if lines == 0 {
			event = ""
			return true, nil
		}
		more, err := fn(event, data)
		event, data, lines = "", data[:0], 0
		return more, err
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if more, err := dispatch(); err != nil || !more {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment (keep-alive)
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if lines == 1 && json.Valid(data) {
				// A server that leaves out the blank line between events:
				// one line of data that is whole JSON is a whole event.
				if more, err := dispatch(); err != nil || !more {
					return err
				}
			}
			if lines > 0 {
				data = append(data, '\n')
			}
			data = append(data, value...)
			lines++
		}
	}
	if err := sc.Err(); err != nil {
		return rb.readError(err)
	}
	_, err := dispatch()
	return err
}

// lines calls fn with each non-blank line of an NDJSON reply until fn
// returns false, fails or the body ends.
func (rb *replyBody) lines(fn func(line []byte) (more bool, err error)) error {
	defer rb.Close()
	if rb.html() {
		rb.peek()
		return rb.malformed("an HTML page, not a JSON stream")
	}
	sc := bufio.NewScanner(rb)
	sc.Buffer(make([]byte, 0, 4<<10), maxLineBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		more, err := fn(line)
		if err != nil && sc.Err() != nil {
			// The scanner hands on what it holds when the body fails —
			// at the reply cap, a line cut short: the cap is why.
			return rb.readError(sc.Err())
		}
		if err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return rb.readError(err)
	}
	return nil
}

// maxRetryAfter caps a parsed Retry-After.
const maxRetryAfter = 24 * time.Hour

// retryAfterOf is the delay a non-2xx answer asks for: retry-after-ms
// (milliseconds; Azure OpenAI sends it, and the OpenAI and Anthropic SDKs
// read it before Retry-After) when it parses, else Retry-After.
func retryAfterOf(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms >= 0 {
		return min(time.Duration(min(ms, maxRetryAfter.Seconds()*1000)*float64(time.Millisecond)), maxRetryAfter)
	}
	return retryAfter(h.Get("Retry-After"))
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return min(time.Duration(min(s, maxRetryAfter.Seconds())*float64(time.Second)), maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return 0
}

// modelOr returns the request's model, or def when it names none.
func modelOr(r Request, def string) string {
	if r.Model != "" {
		return r.Model
	}
	return def
}
