package aeiou

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func newTestHost(t *testing.T, clock *testClock) (*Host, *Counters, *syncBuffer) {
	t.Helper()
	var c Counters
	var logs syncBuffer
	h, err := New(Options{
		Keys:     testKeys(t),
		Observer: &c,
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
		Now:      clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, &c, &logs
}

// TestSessionLoop runs a conversation the way the agent loop will: each turn
// Begin, a magic-tool call, the answer with the token last, Decide.
func TestSessionLoop(t *testing.T) {
	clock := &testClock{t: testNow}
	h, counters, logs := newTestHost(t, clock)
	s, err := h.Session("thread-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Turn 0: continue.
	t0, err := s.Begin()
	if err != nil || t0.Index != 0 || t0.SessionID != "thread-1" {
		t.Fatalf("Begin = %+v, %v", t0, err)
	}
	r0, err := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"continue"}}`))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(1200 * time.Millisecond)
	d := s.Decide(ctx, "Reading the files.\n"+r0.Token+"\n", "tool: ls -> a.go b.go")
	if d.Outcome != OutcomeContinue || d.Record.Decision != "continue" || d.Record.JTI != r0.Claims.JTI || d.Record.KID != testPrimaryKID || d.Record.LatencyMS != 1200 {
		t.Fatalf("turn 0: %+v", d.Record)
	}
	if _, open := s.Turn(); open {
		t.Fatal("turn still open after Decide")
	}
	if _, err := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"done"}}`)); !errors.Is(err, ErrTurn) {
		t.Fatalf("Magic without an open turn: %v", err)
	}

	// Turn 1: the model replays turn 0's token and hides a valid one in its
	// scratch; then answers done properly.
	t1, _ := s.Begin()
	if t1.Index != 1 || t1.Nonce == t0.Nonce {
		t.Fatalf("turn 1 = %+v", t1)
	}
	r1, err := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"done","telemetry":{"files":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d = s.Decide(ctx, "Summary: two files.\n"+r0.Token+"\n"+r1.Token, r1.Token)
	if d.Outcome != OutcomeDone || d.Line != 3 || len(d.Rejected) != 1 || d.Rejected[0].Reason != ReasonWrongTurn {
		t.Fatalf("turn 1: %+v", d)
	}
	if d.Record.VerificationFailureReason != ReasonWrongTurn || d.Record.Rejected != 1 {
		t.Fatalf("turn 1 record: %+v", d.Record)
	}

	// Turn 2: a token only in the scratch is never scanned.
	s.Begin()
	r2, _ := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"abort"}}`))
	d = s.Decide(ctx, "No token here.", r2.Token)
	if d.Outcome != OutcomeMissing || d.Record.Decision != "halt" || d.Record.Reason != ErrCodeTokenMissing || d.Record.JTI != "" {
		t.Fatalf("turn 2: %+v", d.Record)
	}

	// Decide without Begin.
	d = s.Decide(ctx, r2.Token, "")
	if d.Outcome != OutcomeMissing {
		t.Fatalf("no open turn: %+v", d)
	}

	snap := counters.Snapshot()
	if snap.Decisions["continue"] != 1 || snap.Decisions["done"] != 1 || snap.Decisions["halt/"+ErrCodeTokenMissing] != 2 || snap.Failures[ReasonWrongTurn] != 1 || snap.Mints != 3 {
		t.Fatalf("counters %+v", snap)
	}
	recs := logs.records(t)
	if len(recs) != 4 {
		t.Fatalf("%d log records", len(recs))
	}
	for _, k := range []string{"ts", "SID", "turn_index", "decision", "latency_ms", "output_bytes", "scratch_bytes", "kid", "jti"} {
		if _, ok := recs[0][k]; !ok {
			t.Errorf("record lacks %s: %v", k, recs[0])
		}
	}
	if recs[0]["msg"] != "aeiou decision" || recs[0]["SID"] != "thread-1" || recs[0]["level"] != "INFO" || recs[0]["scratch_bytes"] != float64(len("tool: ls -> a.go b.go")) {
		t.Fatalf("record 0 = %v", recs[0])
	}
	if recs[1]["verification_failure_reason"] != string(ReasonWrongTurn) || recs[1]["level"] != "WARN" {
		t.Fatalf("record 1 = %v", recs[1])
	}
	if recs[2]["reason"] != ErrCodeTokenMissing {
		t.Fatalf("record 2 = %v", recs[2])
	}
}

// TestSessionNoProgress checks the mandatory guard: the same continue
// output three turns in a row halts with ERR_NO_PROGRESS; done is not
// overruled.
func TestSessionNoProgress(t *testing.T) {
	clock := &testClock{t: testNow}
	h, counters, _ := newTestHost(t, clock)
	s, _ := h.Session("thread-2")
	ctx := context.Background()
	turn := func(action, text string) Decision {
		if _, err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		r, err := s.Magic(fmt.Appendf(nil, `{"kind":"LOOP","payload":{"action":%q}}`, action))
		if err != nil {
			t.Fatal(err)
		}
		return s.Decide(ctx, text+"\n"+r.Token, "")
	}
	for i, want := range []Outcome{OutcomeContinue, OutcomeContinue, OutcomeNoProgress, OutcomeNoProgress} {
		if d := turn("continue", "Still thinking..."); d.Outcome != want || d.Repeats != i+1 {
			t.Fatalf("turn %d: %v (repeats %d), want %v", i, d.Outcome, d.Repeats, want)
		}
	}
	if d := turn("continue", "Something new"); d.Outcome != OutcomeContinue {
		t.Fatalf("new content: %v", d.Outcome)
	}
	turn("done", "Same")
	turn("done", "Same")
	if d := turn("done", "Same"); d.Outcome != OutcomeDone || d.Repeats != 3 {
		t.Fatalf("done repeated: %v", d.Outcome)
	}
	if d := turn("done", "Same"); d.Record.Reason != "" {
		t.Fatalf("record %+v", d.Record)
	}
	if n := counters.Snapshot().Decisions["halt/"+ErrCodeNoProgress]; n != 2 {
		t.Fatalf("%d no-progress halts", n)
	}
}

// TestSessionFallbackRecord checks that an abort from the fallback signer is
// logged with reason "fallback".
func TestSessionFallbackRecord(t *testing.T) {
	clock := &testClock{t: testNow}
	h, counters, _ := newTestHost(t, clock)
	h.Minter.primary = failingSigner{kid: testPrimaryKID}
	s, _ := h.Session("thread-3")
	s.Begin()
	r, err := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"continue"}}`))
	if err != nil || !r.Fallback {
		t.Fatalf("Magic = %+v, %v", r, err)
	}
	d := s.Decide(context.Background(), r.Token, "")
	if d.Outcome != OutcomeAbort || d.Record.Reason != "fallback" || d.Record.KID != testFallbackKID {
		t.Fatalf("record %+v", d.Record)
	}
	if counters.Snapshot().Decisions["abort/fallback"] != 1 {
		t.Fatalf("counters %+v", counters.Snapshot())
	}
}

// TestSessionsConcurrent runs many sessions at once on one host (-race).
func TestSessionsConcurrent(t *testing.T) {
	h, counters, _ := newTestHost(t, &testClock{t: testNow})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := h.Session(fmt.Sprint("thread-", i))
			if err != nil {
				errs <- err
				return
			}
			for j := range 20 {
				s.Begin()
				r, err := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"continue"}}`))
				if err != nil {
					errs <- err
					return
				}
				if d := s.Decide(context.Background(), fmt.Sprint("step ", j, "\n", r.Token), ""); d.Outcome != OutcomeContinue {
					errs <- fmt.Errorf("session %d turn %d: %v %+v", i, j, d.Outcome, d.Rejected)
					return
				}
			}
			s.Forget()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := counters.Snapshot().Decisions["continue"]; n != 160 {
		t.Fatalf("%d continues", n)
	}
}

// TestNewHost covers New's defaults and checks.
func TestNewHost(t *testing.T) {
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h.Minter.KeyID(), "ed25519-") {
		t.Fatalf("generated kid %s", h.Minter.KeyID())
	}
	if _, err := New(Options{Config: Config{RepeatLimit: 1}}); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad config: %v", err)
	}
	if _, err := h.Session(""); !errors.Is(err, ErrTurn) {
		t.Fatalf("empty session id: %v", err)
	}
	if _, err := h.Session(strings.Repeat("x", MaxSessionIDBytes+1)); !errors.Is(err, ErrTurn) {
		t.Fatalf("long session id: %v", err)
	}
	s, _ := h.Session("t")
	s.Begin()
	r, err := s.Magic([]byte(`{"kind":"LOOP","payload":{"action":"done"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Decide(context.Background(), r.Token, ""); d.Outcome != OutcomeDone {
		t.Fatalf("%+v", d)
	}
}
