package organism_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// longConvYAML is the organism of the long-conversation tests: mathbot,
// with calculate, talking to the loopback model at %s.
const longConvYAML = `organism: {name: longconv}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: %s, model: test-model}
listeners:
  - name: mathbot
    agent: true
    description: Answers arithmetic questions
    prompt: You are mathbot.
    tools: [calculate]
%s`

// startLongConv starts a durable organism (on dir, "" for none) for the
// long-conversation tests; extra is appended to mathbot's listener entry.
func startLongConv(t testing.TB, url, dir, extra string) *organism.Organism {
	t.Helper()
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(longConvYAML, url, extra)))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("LONGCONV_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := organism.New(cfg, organism.Options{Logger: log, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

// turnText is what the user says at turn k of a long conversation.
func turnText(k int) string { return fmt.Sprintf("turn %d", k) }

// callTurn reports whether the model calls calculate at turn k.
func callTurn(k int) bool { return k%5 == 0 }

// newLongModel starts a loopback model that answers each request with
// reply of the request's messages.
func newLongModel(t testing.TB, reply func(msgs []llmtest.Message) []string) *llmtest.ChatModel {
	var p atomic.Pointer[llmtest.ChatModel]
	m := llmtest.NewChatModel(t, func(n int) []string { return reply(p.Load().Request(t, n)) })
	p.Store(m)
	return m
}

// longReply is the model of a long conversation: it answers "turn k" with
// "answer k", calling calculate first at every fifth turn (its result then
// closes the turn: "answer k is 42").
func longReply(msgs []llmtest.Message) []string {
	last := msgs[len(msgs)-1]
	k := lastTurn(msgs)
	if last.Role == "tool" {
		return []string{fmt.Sprintf("answer %d is %s", k, last.Content)}
	}
	if callTurn(k) {
		return []string{llmtest.ToolCall(fmt.Sprintf("c%d", k), "calculate", `{"Expression":"6*7"}`)}
	}
	return []string{fmt.Sprintf("answer %d", k)}
}

// lastTurn is the number of the latest "turn k" user message of msgs.
func lastTurn(msgs []llmtest.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		_, text, _ := strings.Cut(msgs[i].Content, "\n")
		var k int
		if _, err := fmt.Sscanf(text, "turn %d", &k); err == nil {
			return k
		}
	}
	return -1
}

// transcript is a request's conversation, system messages aside, one
// line a message: "U turn 3", "A answer 3", "C c5 calculate", "T c5 42".
func transcript(msgs []llmtest.Message) []string {
	var out []string
	for _, m := range msgs {
		switch m.Role {
		case "system":
		case "user":
			_, text, found := strings.Cut(m.Content, "\n")
			if !found || !strings.HasPrefix(m.Content, "[From ") {
				text = m.Content
			}
			out = append(out, "U "+text)
		case "assistant":
			if m.Content != "" {
				out = append(out, "A "+m.Content)
			}
			for _, c := range m.ToolCalls {
				out = append(out, "C "+c.ID+" "+c.Function.Name)
			}
		case "tool":
			out = append(out, "T "+m.ToolCallID+" "+m.Content)
		default:
			out = append(out, m.Role+" "+m.Content)
		}
	}
	return out
}

// wantTranscript is what the model must be sent at the first call of
// turn k: every earlier turn, in order, once, each call with its result.
func wantTranscript(k int) []string {
	var out []string
	for j := 1; j <= k; j++ {
		out = append(out, "U "+turnText(j))
		if j == k {
			break
		}
		if callTurn(j) {
			id := fmt.Sprintf("c%d", j)
			out = append(out, "C "+id+" calculate", "T "+id+` {"Expression":"6*7","Value":"42"}`,
				fmt.Sprintf(`A answer %d is {"Expression":"6*7","Value":"42"}`, j))
			continue
		}
		out = append(out, fmt.Sprintf("A answer %d", j))
	}
	return out
}

// TestLongConversationHistory: a Go caller continues one conversation
// with an agent turn after turn, with a clean restart of the durable
// organism in between: at every turn's first model call the model is sent
// every earlier turn, in order, once, each tool call with its result — the
// same after the restart as without it.
func TestLongConversationHistory(t *testing.T) {
	const turns, restartAt = 120, 60
	m := newLongModel(t, longReply)
	dir := t.TempDir()
	o := startLongConv(t, m.URL, dir, "")
	defer func() { _ = o.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	conv := ""
	for k := 1; k <= turns; k++ {
		if k == restartAt {
			if err := o.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			o = startLongConv(t, m.URL, dir, "")
		}
		first := m.Count()
		ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		conv = ev.Conversation
		want := fmt.Sprintf("answer %d", k)
		if callTurn(k) {
			want += ` is {"Expression":"6*7","Value":"42"}`
		}
		if text, _ := organism.PayloadText(ev.Payload); text != want {
			t.Fatalf("turn %d: answer %q, want %q", k, text, want)
		}
		if d := cmp.Diff(wantTranscript(k), transcript(m.Request(t, first))); d != "" {
			t.Fatalf("turn %d: what the model is sent (-want +got):\n%s", k, d)
		}
	}
}

// TestLongConversationWindow: a conversation that outgrows the agent's
// context window is sent its latest turns whole and in order, a call never
// without its result, after a note saying how many earlier messages were
// left out — the same after a restart — and each request stays within the
// window.
func TestLongConversationWindow(t *testing.T) {
	const turns, restartAt, window = 300, 150, 1024
	m := newLongModel(t, longReply)
	dir := t.TempDir()
	extra := fmt.Sprintf("    context_window: %d\n", window)
	o := startLongConv(t, m.URL, dir, extra)
	defer func() { _ = o.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	conv := ""
	trimmed := false
	for k := 1; k <= turns; k++ {
		if k == restartAt {
			if err := o.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			o = startLongConv(t, m.URL, dir, extra)
		}
		first := m.Count()
		ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		conv = ev.Conversation
		msgs := m.Request(t, first)
		size := 0
		for _, msg := range msgs {
			size += len(msg.Content)
			for _, c := range msg.ToolCalls {
				size += len(c.Function.Name) + len(c.Function.Arguments)
			}
		}
		if size/4 > window {
			t.Fatalf("turn %d: a request of about %d tokens for a window of %d", k, size/4, window)
		}
		got := transcript(msgs)
		all := wantTranscript(k)
		if len(got) > 0 && strings.HasPrefix(got[0], "U [") && strings.Contains(got[0], "omitted to fit the context window") {
			trimmed = true
			var n int
			if _, err := fmt.Sscanf(got[0], "U [%d earlier", &n); err != nil {
				t.Fatalf("turn %d: note %q", k, got[0])
			}
			got = got[1:]
			if n != len(all)-len(got) {
				t.Errorf("turn %d: the note says %d omitted, %d were", k, n, len(all)-len(got))
			}
			if strings.HasPrefix(got[0], "T ") {
				t.Fatalf("turn %d: the kept history begins with a result without its call: %q", k, got[0])
			}
		}
		if len(got) > len(all) {
			t.Fatalf("turn %d: %d messages sent, %d in the conversation", k, len(got), len(all))
		}
		if d := cmp.Diff(all[len(all)-len(got):], got); d != "" {
			t.Fatalf("turn %d: what the model is sent (-want +got):\n%s", k, d)
		}
	}
	if !trimmed {
		t.Fatal("the conversation never outgrew the window")
	}
}

// TestLongConversationHistoryFull: a conversation whose history reaches
// platform.context_buffer.max_slots_per_thread is never answered as if
// the latest message had not been said: the model is never asked without
// the caller's latest message, and the caller is told that the
// conversation is full and to begin a new one; a new conversation goes on
// as usual.
func TestLongConversationHistoryFull(t *testing.T) {
	m := newLongModel(t, longReply)
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(longConvYAML, m.URL, "")+
		"platform: {context_buffer: {max_slots_per_thread: 20}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = o.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	conv, full := "", 0
	for k := 1; k <= 16; k++ {
		first := m.Count()
		ev, err := o.ContinueText(ctx, conv, "mathbot", turnText(k))
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		conv = ev.Conversation
		text, _ := organism.PayloadText(ev.Payload)
		if m.Count() > first {
			if got := lastTurn(m.Request(t, first)); got != k {
				t.Fatalf("turn %d: the model was asked about turn %d (answer %q)", k, got, text)
			}
		}
		if strings.HasPrefix(text, "answer ") {
			if full > 0 {
				t.Fatalf("turn %d: answered %q after the history was full", k, text)
			}
			continue
		}
		full++
		if !strings.Contains(text, "history is full") || !strings.Contains(text, "new conversation") {
			t.Fatalf("turn %d: answer %q, want the conversation's history full", k, text)
		}
	}
	if full == 0 {
		t.Fatal("the history never filled")
	}
	ev, err := o.ContinueText(ctx, "", "mathbot", turnText(1))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := organism.PayloadText(ev.Payload); text != "answer 1" {
		t.Fatalf("a new conversation: %q", text)
	}
}
