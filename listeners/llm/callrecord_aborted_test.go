package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/config"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
)

// TestCallRecordOfAStoppedCall: the CallRecord of an attempt its caller
// stopped while the model streamed says Aborted and keeps the tokens it
// spent, estimated (the prompt's, and the text streamed before the stop);
// one the backend refused before writing anything is a failure, neither
// aborted nor spending tokens.
func TestCallRecordOfAStoppedCall(t *testing.T) {
	type got struct {
		Aborted, Estimated, Spent bool
	}
	for _, tc := range []struct {
		name string
		// chat runs the call on r, stopping it as the case says.
		chat func(t *testing.T, r *Router) error
		want got
	}{
		{name: "stopped while streaming", want: got{Aborted: true, Estimated: true, Spent: true},
			chat: func(t *testing.T, r *Router) error {
				m := llmtest.NewChatModel(t, func(int) []string { return []string{"Rain on tin", " roofs"} })
				m.Hold = make(chan struct{})
				t.Cleanup(func() { close(m.Hold) })
				r.cfg.Backends = []*Backend{llmtestBackend(t, m)}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				// The caller stops the call once the first text has come.
				_, err := r.Chat(ctx, Request{Messages: testMessages, Agent: "poet", Thread: "t1", OnDelta: func(d Delta) {
					if d.Text != "" {
						cancel()
					}
				}})
				return err
			}},
		{name: "refused", want: got{},
			chat: func(t *testing.T, r *Router) error {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
				}))
				t.Cleanup(srv.Close)
				b, err := NewBackend(config.Backend{Provider: config.OpenAI, Name: "loop", BaseURL: srv.URL, Priority: 1,
					RateLimitTPM: 100000, MaxConcurrent: 1, Timeout: config.Duration(time.Minute)}, "sk-test", srv.Client())
				if err != nil {
					t.Fatal(err)
				}
				r.cfg.Backends = []*Backend{b}
				_, err = r.Chat(context.Background(), Request{Messages: testMessages, Agent: "poet", Thread: "t1",
					OnDelta: func(Delta) {}})
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []CallRecord
			r := NewRouter(RouterConfig{OnCall: func(rec CallRecord) { recs = append(recs, rec) }})
			if err := tc.chat(t, r); err == nil {
				t.Fatal("the call succeeded")
			}
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(recs), recs)
			}
			rec := recs[0]
			if rec.Err == nil || tc.want.Aborted && !errors.Is(rec.Err, context.Canceled) {
				t.Errorf("record's Err %v", rec.Err)
			}
			g := got{Aborted: rec.Aborted, Estimated: rec.UsageEstimated,
				Spent: rec.Usage.PromptTokens > 0 && rec.Usage.CompletionTokens > 0}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("record %+v (-want +got):\n%s", rec, diff)
			}
			if !tc.want.Spent && rec.Usage != (Usage{}) {
				t.Errorf("usage %+v, want none", rec.Usage)
			}
		})
	}
}
