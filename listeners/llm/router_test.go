package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
)

// countingReply answers with fail for the first n requests, then ok.
func countingReply(n int32, fail, ok http.HandlerFunc) http.HandlerFunc {
	var calls atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= n {
			fail(w, r)
			return
		}
		ok(w, r)
	}
}

func statusReply(code int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}
}

func TestRouterRetries(t *testing.T) {
	tests := []struct {
		name     string
		reply    http.HandlerFunc
		retries  int
		wantErr  error
		requests int
		sleeps   int
		first    time.Duration // first sleep, 0: jittered backoff of 100ms
	}{
		{"500 then ok", countingReply(2, statusReply(500, ""), okReply(config.OpenAI, "ok")), 3, nil, 3, 2, 0},
		{"500 always", statusReply(500, ""), 3, ErrServer, 4, 3, 0},
		{"429 retry-after", countingReply(1, statusReply(429, "2"), okReply(config.OpenAI, "ok")), 3, nil, 2, 1, 2 * time.Second},
		{"401 not retried", statusReply(401, ""), 3, ErrAuth, 1, 0, 0},
		// OpenAI's 429 for an account out of credit (error type and code
		// insufficient_quota): waiting does not help.
		{"429 insufficient_quota not retried", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.",`+
				`"type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
		}, 3, ErrQuota, 1, 0, 0},
		{"no retries", statusReply(503, ""), 0, ErrServer, 1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			s := &sleeps{}
			r := NewRouter(RouterConfig{Retries: tc.retries, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second,
				Backends: []*Backend{backendFor(t, config.OpenAI, "only", f)}, Sleep: s.sleep})
			rep, err := r.Chat(context.Background(), Request{Messages: testMessages, Agent: "poet", Thread: "t1"})
			if tc.wantErr == nil && (err != nil || rep.Content != "ok") {
				t.Fatalf("reply %+v, err %v", rep, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if n := len(f.requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			got := s.all()
			if len(got) != tc.sleeps {
				t.Fatalf("sleeps %v, want %d", got, tc.sleeps)
			}
			if len(got) > 0 {
				lo, hi := 75*time.Millisecond, 125*time.Millisecond
				if tc.first > 0 {
					lo, hi = tc.first, tc.first
				}
				if got[0] < lo || got[0] > hi {
					t.Errorf("first sleep %v, want in [%v, %v]", got[0], lo, hi)
				}
			}
			if tc.wantErr == nil {
				if u := r.AgentUsage("poet"); u != (Usage{11, 7, 1}) {
					t.Errorf("agent usage %+v", u)
				}
				if u := r.ThreadUsage("t1"); u.Total() != 18 {
					t.Errorf("thread usage %+v", u)
				}
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	r := NewRouter(RouterConfig{BaseDelay: time.Second, MaxDelay: 5 * time.Second})
	for attempt, base := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		for range 50 {
			d := r.backoff(attempt)
			if d < base*3/4 || d > base*5/4 {
				t.Fatalf("backoff(%d) = %v, want %v ±25%%", attempt, d, base)
			}
		}
	}
}

func TestFailoverOrder(t *testing.T) {
	var order []string
	mk := func(name string, code int) *fakeProvider {
		return newFake(t, func(w http.ResponseWriter, r *http.Request) {
			order = append(order, name)
			if code != 200 {
				w.WriteHeader(code)
				return
			}
			okReply(config.OpenAI, name)(w, r)
		})
	}
	primary, secondary, third := mk("primary", 500), mk("secondary", 500), mk("third", 200)
	r := NewRouter(RouterConfig{Retries: 3, Sleep: (&sleeps{}).sleep, Backends: []*Backend{
		backendFor(t, config.OpenAI, "third", third, func(c *config.Backend) { c.Priority = 3 }),
		backendFor(t, config.OpenAI, "primary", primary, func(c *config.Backend) { c.Priority = 1 }),
		backendFor(t, config.OpenAI, "secondary", secondary, func(c *config.Backend) { c.Priority = 2 }),
	}})
	rep, err := r.Chat(context.Background(), Request{Messages: testMessages})
	if err != nil || rep.Backend != "third" {
		t.Fatalf("reply %+v, err %v", rep, err)
	}
	if got := strings.Join(order, ","); got != "primary,secondary,third" {
		t.Errorf("order %s", got)
	}
}

func TestFailoverSkipsBadKey(t *testing.T) {
	bad := newFake(t, statusReply(401, ""))
	good := newFake(t, okReply(config.Anthropic, "fine"))
	s := &sleeps{}
	r := NewRouter(RouterConfig{Retries: 1, Sleep: s.sleep, Backends: []*Backend{
		backendFor(t, config.OpenAI, "bad", bad), backendFor(t, config.Anthropic, "good", good, func(c *config.Backend) { c.Priority = 2 }),
	}})
	rep, err := r.Chat(context.Background(), Request{Messages: testMessages})
	if err != nil || rep.Content != "fine" || len(s.all()) != 0 {
		t.Fatalf("reply %+v, err %v, sleeps %v", rep, err, s.all())
	}
}

func TestRoundRobinSpread(t *testing.T) {
	a, b, c := newFake(t, okReply(config.OpenAI, "a")), newFake(t, okReply(config.OpenAI, "b")), newFake(t, okReply(config.OpenAI, "c"))
	r := NewRouter(RouterConfig{Strategy: config.RoundRobin, Backends: []*Backend{
		backendFor(t, config.OpenAI, "a", a), backendFor(t, config.OpenAI, "b", b), backendFor(t, config.OpenAI, "c", c)}})
	for range 9 {
		if _, err := r.Chat(context.Background(), Request{Messages: testMessages}); err != nil {
			t.Fatal(err)
		}
	}
	for name, f := range map[string]*fakeProvider{"a": a, "b": b, "c": c} {
		if n := len(f.requests()); n != 3 {
			t.Errorf("%s got %d requests, want 3", name, n)
		}
	}
	if u := r.Usage().Backends; u["a"].Requests != 3 || u["b"].Requests != 3 {
		t.Errorf("backend usage %+v", u)
	}
}

func TestLeastLoadedChoice(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	busy := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		okReply(config.OpenAI, "busy")(w, r)
	})
	idle := newFake(t, okReply(config.OpenAI, "idle"))
	bb := backendFor(t, config.OpenAI, "busy", busy, func(c *config.Backend) { c.MaxConcurrent = 2 })
	r := NewRouter(RouterConfig{Strategy: config.LeastLoaded, Backends: []*Backend{bb,
		backendFor(t, config.OpenAI, "idle", idle, func(c *config.Backend) { c.MaxConcurrent = 2 })}})
	done := make(chan error, 1)
	go func() {
		_, err := r.Chat(context.Background(), Request{Messages: testMessages})
		done <- err
	}()
	<-arrived // the first request (both idle: the first backend) is in flight on busy
	rep, err := r.Chat(context.Background(), Request{Messages: testMessages})
	if err != nil || rep.Backend != "idle" {
		t.Fatalf("reply %+v, err %v: want the idle backend", rep, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestBucketFailsFastWhenTooLarge(t *testing.T) {
	f := newFake(t, okReply(config.OpenAI, "never"))
	s := &sleeps{}
	r := NewRouter(RouterConfig{Retries: 3, Sleep: s.sleep, Backends: []*Backend{
		backendFor(t, config.OpenAI, "tiny", f, func(c *config.Backend) { c.RateLimitTPM = 50 })}})
	start := time.Now()
	_, err := r.Chat(context.Background(), Request{Messages: []Message{{Role: User, Content: strings.Repeat("x", 4000)}}})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), "rate_limit_tpm is 50") {
		t.Errorf("error does not say why: %v", err)
	}
	if time.Since(start) > time.Second || len(f.requests()) != 0 || len(s.all()) != 0 {
		t.Errorf("took %v, %d requests, sleeps %v", time.Since(start), len(f.requests()), s.all())
	}
}

func TestBucketWaitIsBoundedByContext(t *testing.T) {
	b := newBucket(60, time.Now) // one token a second
	if err := b.acquire(context.Background(), 60); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := b.acquire(ctx, 30); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestBucketRefills(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBucket(600, func() time.Time { return now })
	if err := b.acquire(context.Background(), 600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Second) // half a minute: 300 tokens
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.acquire(ctx, 300); err != nil {
		t.Fatalf("acquire after refill: %v", err)
	}
	b.settle(100) // the reply used 100 more than estimated: debt
	if b.tokens != -100 {
		t.Errorf("tokens = %v, want -100", b.tokens)
	}
}

func TestNoBackendServesModel(t *testing.T) {
	f := newFake(t, okReply(config.OpenAI, "x"))
	local := newFake(t, okReply(config.Ollama, "x"))
	// Both point at a base_url of their own, so only supported_models narrows
	// what they serve.
	r := NewRouter(RouterConfig{Backends: []*Backend{
		backendFor(t, config.XAI, "grok", f, func(c *config.Backend) { c.SupportedModels = []string{"grok-3-mini"} }),
		backendFor(t, config.Ollama, "local", local, func(c *config.Backend) { c.SupportedModels = []string{"llama3.2"} }),
	}})
	_, err := r.Chat(context.Background(), Request{Model: "gpt-4o", Messages: testMessages})
	if !errors.Is(err, ErrNoBackend) || !strings.Contains(err.Error(), "grok, local") {
		t.Fatalf("err = %v", err)
	}
	if len(f.requests()) != 0 {
		t.Error("a request was sent")
	}
	if _, err := r.Chat(context.Background(), Request{Model: "LLAMA3.2", Messages: testMessages}); err != nil {
		t.Fatalf("supported model: %v", err)
	}
}

func TestServes(t *testing.T) {
	tests := []struct {
		p         config.Provider
		supported []string
		model     string
		want      bool
	}{
		{config.XAI, nil, "grok-3-mini", true},
		{config.XAI, nil, "gpt-4o", false},
		{config.OpenAI, nil, "gpt-4o", true},
		{config.OpenAI, nil, "o3-mini", true},
		{config.OpenAI, nil, "foo-o1", false},
		{config.Anthropic, nil, "claude-sonnet-4-5", true},
		{config.Ollama, nil, "anything", true},
		{config.Ollama, []string{"llama3.2"}, "mistral", false},
		{config.OpenAI, []string{"my-finetune"}, "gpt-4o", false},
		{config.OpenAI, []string{"my-finetune"}, "My-Finetune", true},
		{config.Anthropic, nil, "", true},
		// Explicitly the provider's own API: the family still applies.
		{config.OpenAI, nil, "https://api.openai.com/v1/|llama-3.1-8b", false},
		// An OpenAI-compatible server (vLLM, LM Studio, llama.cpp, a proxy)
		// serves any name unless supported_models narrows it.
		{config.OpenAI, nil, "http://localhost:8000/v1|Qwen/Qwen2.5-7B-Instruct", true},
		{config.Anthropic, nil, "https://proxy.example/anthropic|my-model", true},
		{config.XAI, []string{"grok-4"}, "http://localhost:8000/v1|gpt-4o", false},
	}
	for _, tc := range tests {
		base, model, ok := strings.Cut(tc.model, "|")
		if ok {
			tc.model = model
		} else {
			base = ""
		}
		b, err := NewBackend(config.Backend{Provider: tc.p, SupportedModels: tc.supported, BaseURL: base}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Serves(tc.model); got != tc.want {
			t.Errorf("%s%v at %q serves %q = %v, want %v", tc.p, tc.supported, base, tc.model, got, tc.want)
		}
	}
}

func TestCloseCancelsInFlight(t *testing.T) {
	arrived := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	r := NewRouter(RouterConfig{Retries: 3, Backends: []*Backend{backendFor(t, config.OpenAI, "hang", f)}})
	done := make(chan error, 1)
	go func() {
		_, err := r.Chat(context.Background(), Request{Messages: testMessages})
		done <- err
	}()
	<-arrived
	r.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestMaxConcurrentPerBackend(t *testing.T) {
	var inFlight, peak atomic.Int32
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		okReply(config.OpenAI, "ok")(w, r)
	})
	b := backendFor(t, config.OpenAI, "one", f, func(c *config.Backend) { c.MaxConcurrent = 1 })
	r := NewRouter(RouterConfig{Backends: []*Backend{b}})
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := r.Chat(context.Background(), Request{Messages: testMessages})
			errs <- err
		}()
	}
	for i := range 3 {
		<-arrived // one request reaches the server at a time
		if got := b.active.Load(); got != 1 {
			t.Errorf("request %d: %d in flight on the backend", i, got)
		}
		release <- struct{}{}
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != 1 {
		t.Errorf("peak concurrency %d, want 1", peak.Load())
	}
}

func TestBucketWaitBoundedByBackendTimeout(t *testing.T) {
	f := newFake(t, okReply(config.OpenAI, "ok"))
	b := backendFor(t, config.OpenAI, "slow-bucket", f, func(c *config.Backend) {
		c.RateLimitTPM = 60
		c.Timeout = config.Duration(50 * time.Millisecond)
	})
	req := Request{Messages: []Message{{Role: User, Content: strings.Repeat("x", 200)}}}
	if _, err := b.do(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.do(context.Background(), req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the timeout while waiting for the bucket", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("waited %v", el)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

func TestRouterCallRecords(t *testing.T) {
	stream := sseEvents(
		`{"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Let me check.","tool_calls":[{"index":0,"id":"call_a","function":{"name":"calculate","arguments":"{}"}},{"index":1,"id":"call_b","function":{"name":"calculate","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12}}`,
		`[DONE]`)
	f := newFake(t, countingReply(1, statusReply(503, ""), stream))
	var recs []CallRecord
	r := NewRouter(RouterConfig{Retries: 2, Sleep: (&sleeps{}).sleep, OnCall: func(c CallRecord) { recs = append(recs, c) },
		Backends: []*Backend{backendFor(t, config.OpenAI, "local", f)}})
	rep, err := r.Chat(context.Background(), Request{Model: "gpt-x", Messages: testMessages, Tools: testTools, Agent: "poet",
		Thread: "t1", OnDelta: func(Delta) {}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want one per attempt: %+v", len(recs), recs)
	}
	failed, ok := recs[0], recs[1]
	if failed.Attempt != 1 || !errors.Is(failed.Err, ErrServer) || failed.Usage != (Usage{}) || failed.Backend != "local" ||
		failed.Model != "gpt-x" || failed.FinishReason != "" || failed.Duration <= 0 {
		t.Errorf("failed attempt %+v", failed)
	}
	if ok.Attempt != 2 || ok.Err != nil || ok.Usage != (Usage{30, 12, 1}) || ok.FinishReason != FinishToolCalls ||
		ok.ToolCalls != 2 || !ok.Streamed || ok.Agent != "poet" || ok.Thread != "t1" || ok.FirstToken <= 0 ||
		ok.Duration < ok.FirstToken || ok.Duration < ok.Wait || ok.Start.IsZero() {
		t.Errorf("successful attempt %+v", ok)
	}
	if rep.Duration != ok.Duration || rep.FirstToken != ok.FirstToken {
		t.Errorf("reply timing %v/%v, record %v/%v", rep.Duration, rep.FirstToken, ok.Duration, ok.FirstToken)
	}
	if u := r.AgentUsage("poet"); u != (Usage{30, 12, 1}) {
		t.Errorf("agent usage %+v: only the successful call counts", u)
	}
	r.SetOnCall(nil)
	if _, err := r.Chat(context.Background(), Request{Model: "gpt-x", Messages: testMessages, OnDelta: func(Delta) {}}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Errorf("the removed observer was called")
	}
}

func TestRouterErrorNamesModelAndBackendOnce(t *testing.T) {
	notFound := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error":{"message":"The model `+"`gpt-test`"+` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`)
	}
	tests := []struct {
		name     string
		backends func(t *testing.T) []*Backend
		retries  int
		want     string
	}{
		{"one backend", func(t *testing.T) []*Backend {
			return []*Backend{backendFor(t, config.OpenAI, "quick", newFake(t, notFound))}
		}, 3, `model "gpt-test" on backend quick: HTTP 404 (request rejected): invalid_request_error: The model ` + "`gpt-test`" + ` does not exist or you do not have access to it.`},
		{"retried", func(t *testing.T) []*Backend {
			return []*Backend{backendFor(t, config.OpenAI, "quick", newFake(t, statusReply(500, "")))}
		}, 2, `model "gpt-test" on backend quick: HTTP 500 (provider server error) (3 attempts)`},
		{"two backends", func(t *testing.T) []*Backend {
			return []*Backend{backendFor(t, config.OpenAI, "first", newFake(t, statusReply(401, ""))),
				backendFor(t, config.OpenAI, "second", newFake(t, notFound), func(c *config.Backend) { c.Priority = 2 })}
		}, 3, `model "gpt-test" on backend second: HTTP 404 (request rejected): invalid_request_error: The model ` + "`gpt-test`" +
			` does not exist or you do not have access to it. (2 attempts); backend first: HTTP 401 (authentication failed)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRouter(RouterConfig{Retries: tc.retries, Sleep: (&sleeps{}).sleep, Backends: tc.backends(t),
				Logger: slog.New(slog.DiscardHandler)})
			_, err := r.Chat(context.Background(), Request{Model: "gpt-test", Messages: testMessages})
			var ce *CallError
			if !errors.As(err, &ce) || !errors.Is(err, ErrAllFailed) {
				t.Fatalf("err = %v (%T), want a *CallError", err, err)
			}
			if err.Error() != tc.want {
				t.Errorf("err = %s\nwant  %s", err, tc.want)
			}
		})
	}
}

func TestRouterRestartsTheStream(t *testing.T) {
	broken := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
	}
	f := newFake(t, countingReply(1, broken, okReply(config.OpenAI, "Hello")))
	var deltas []Delta
	r := NewRouter(RouterConfig{Retries: 1, Sleep: (&sleeps{}).sleep, Backends: []*Backend{backendFor(t, config.OpenAI, "b", f)},
		Logger: slog.New(slog.DiscardHandler)})
	rep, err := r.Chat(context.Background(), Request{Messages: testMessages, OnDelta: func(d Delta) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []Delta{{Text: "Hel"}, {Restart: true}, {Text: "Hello"}}
	if rep.Content != "Hello" || !reflect.DeepEqual(deltas, want) {
		t.Errorf("reply %q, deltas %+v", rep.Content, deltas)
	}
}

func TestRouterRefusesInvalidRequest(t *testing.T) {
	f := newFake(t, okReply(config.OpenAI, "never"))
	var recs int
	r := NewRouter(RouterConfig{Backends: []*Backend{backendFor(t, config.OpenAI, "b", f)}, OnCall: func(CallRecord) { recs++ }})
	_, err := r.Chat(context.Background(), Request{Messages: testMessages, Tools: []ToolSpec{{Name: "weather.forecast"}}})
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), `name "weather.forecast" must match`) {
		t.Fatalf("err = %v", err)
	}
	if len(f.requests()) != 0 || recs != 0 {
		t.Errorf("%d requests, %d records", len(f.requests()), recs)
	}
}

func TestRouterCancelledNamesTheCause(t *testing.T) {
	arrived := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	r := NewRouter(RouterConfig{Retries: 3, Backends: []*Backend{backendFor(t, config.OpenAI, "hang", f)}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := r.Chat(ctx, Request{Model: "gpt-x", Messages: testMessages})
	var ce *CallError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) || errors.Is(err, ErrAllFailed) {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(err.Error(), `model "gpt-x" on backend hang: `) || strings.Count(err.Error(), "hang") != 1 {
		t.Errorf("err = %v", err)
	}
}
