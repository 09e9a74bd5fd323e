package memory

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// testService is a Service over a real store with per-agent policies and
// a set of approved threads.
func testService(t *testing.T, policies map[string]Consent, approved map[string]Approval) (*Service, *store.Store, *[]Refusal) {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var refused []Refusal
	s := &Service{
		Book: func(context.Context) (Book, error) { return st, nil },
		Policy: func(agent string) (Consent, bool) {
			c, ok := policies[agent]
			return c, ok
		},
		Approved: func(_ context.Context, thread string) (Approval, bool, error) {
			a, ok := approved[thread]
			return a, ok, nil
		},
		Refused: func(r Refusal) { refused = append(refused, r) },
		Logger:  slog.New(slog.DiscardHandler),
	}
	return s, st, &refused
}

func tool(t *testing.T, s *Service, name string) llm.LocalTool {
	t.Helper()
	for _, lt := range s.Tools() {
		if lt.Spec.Name == name {
			return lt
		}
	}
	t.Fatalf("no tool %s", name)
	return llm.LocalTool{}
}

func TestToolsSchemas(t *testing.T) {
	s, _, _ := testService(t, nil, nil)
	var schema map[string]any
	if err := json.Unmarshal(tool(t, s, RememberTool).Spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	props := schema["properties"].(map[string]any)
	if _, ok := props["Content"]; !ok || props["Tags"].(map[string]any)["type"] != "array" ||
		schema["required"].([]any)[0] != "Content" {
		t.Fatalf("remember schema %v", schema)
	}
	schema = nil
	if err := json.Unmarshal(tool(t, s, RecallTool).Spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if _, req := schema["required"]; req {
		t.Fatalf("recall has required arguments: %v", schema)
	}
	if got := tool(t, s, RememberTool).Sends; len(got) != 1 || got[0] != ListenerName {
		t.Fatalf("remember sends to %v", got)
	}
}

func TestRememberTool(t *testing.T) {
	s, _, refused := testService(t, map[string]Consent{"asker": ConsentAsk, "refuser": ConsentNever, "keeper": ConsentAlways}, nil)
	remember := tool(t, s, RememberTool).Call
	call := func(agent, args string) (llm.LocalResult, error) {
		return remember(context.Background(), llm.LocalCall{Agent: agent, Thread: "t1", ID: "c1",
			Arguments: json.RawMessage(args), Metadata: xmlpipe.Metadata{User: "alice"}})
	}
	for _, tc := range []struct {
		name, agent, args string
		send              bool
		result            string
		err               bool
	}{
		{"ask sends", "asker", `{"Content":"Alice likes tea","Tags":["drinks"]}`, true, "", false},
		{"always sends", "keeper", `{"Content":"Alice likes tea"}`, true, "", false},
		{"never refuses", "refuser", `{"Content":"Alice likes tea"}`, false, "policy is never", false},
		{"secret refused under always", "keeper", `{"Content":"the db password: hunter2"}`, false, "holds a password", false},
		{"secret in a tag", "keeper", `{"Content":"db","Tags":["sk-abcdefghijklmnopqrstuvwx"]}`, false, "API key", false},
		{"empty", "keeper", `{"Content":"  "}`, false, "Content is empty", false},
		{"too long", "keeper", `{"Content":"` + strings.Repeat("x", DefaultMaxBytes+1) + `"}`, false, "at most 4096", false},
		{"bad tag", "keeper", `{"Content":"x","Tags":[""]}`, false, "tag", false},
		{"unknown argument", "keeper", `{"Content":"x","Why":"y"}`, false, "", true},
		{"not JSON", "keeper", `{"Content":`, false, "", true},
		{"agent without memory", "stranger", `{"Content":"x"}`, false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(tc.agent, tc.args)
			if tc.err {
				if err == nil {
					t.Fatalf("result %+v, want an error", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.send {
				if res.Send == nil || res.Send.To != ListenerName {
					t.Fatalf("result %+v, want a send to %s", res, ListenerName)
				}
				if p, ok := res.Send.Payload.(*Remember); !ok || p.Content != "Alice likes tea" {
					t.Fatalf("payload %#v", res.Send.Payload)
				}
				return
			}
			if res.Send != nil || !res.IsError || !strings.Contains(res.Content, tc.result) {
				t.Fatalf("result %+v, want a refusal saying %q", res, tc.result)
			}
		})
	}
	if len(*refused) != 2 || (*refused)[0].Finding.Kind != KindPassword || (*refused)[0].User != "alice" {
		t.Fatalf("refusals %+v", *refused)
	}
}

func TestHandleStoresOnlyWithConsent(t *testing.T) {
	approved := map[string]Approval{"t-approved": {ID: "ap1", DecidedBy: "bob", Conversation: "c1"}}
	s, st, _ := testService(t, map[string]Consent{"asker": ConsentAsk, "keeper": ConsentAlways, "refuser": ConsentNever}, approved)
	ctx := context.Background()
	handle := func(agent, thread, user, content string) (xmlpipe.Response, error) {
		return s.Handle(ctx, &Remember{Content: content}, xmlpipe.Metadata{From: agent, ThreadID: thread, User: user})
	}
	if _, err := handle("asker", "t-other", "alice", "Alice likes tea"); !errors.Is(err, ErrNoConsent) {
		t.Fatalf("ask without approval: %v", err)
	}
	if _, err := handle("refuser", "t-approved", "alice", "Alice likes tea"); !errors.Is(err, ErrNoConsent) {
		t.Fatalf("never: %v", err)
	}
	if _, err := handle("stranger", "t-approved", "alice", "Alice likes tea"); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("stranger: %v", err)
	}
	if _, err := handle("keeper", "t1", "alice", "card 4111 1111 1111 1111"); !errors.Is(err, ErrProhibited) {
		t.Fatalf("card: %v", err)
	}
	if rows, _ := st.Memories(ctx, store.MemoryQuery{AnyUser: true}); len(rows) != 0 {
		t.Fatalf("stored without consent: %+v", rows)
	}
	resp, err := handle("asker", "t-approved", "alice", "Alice likes tea")
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*xmlpipe.RespondResponse).Payload.(*Remembered)
	if r.Consent != "ap1" || !strings.Contains(r.Message, "approved by bob") {
		t.Fatalf("answer %+v", r)
	}
	if _, err := handle("keeper", "t2", "", "The organism's note about tea"); err != nil {
		t.Fatal(err)
	}
	rows, _ := st.Memories(ctx, store.MemoryQuery{User: "alice"})
	if len(rows) != 1 || rows[0].ID != r.ID || rows[0].Consent != "ap1" || rows[0].Conversation != "c1" || rows[0].Agent != "asker" {
		t.Fatalf("alice's memories %+v", rows)
	}
	// recall reads the caller's user's memories only.
	recall := tool(t, s, RecallTool).Call
	for _, tc := range []struct{ user, args, want, not string }{
		{"alice", `{"Query":"tea"}`, "Alice likes tea", "organism"},
		{"", `{"Query":"tea"}`, "organism's note", "Alice"},
		{"bob", `{}`, "Nothing remembered", "tea"},
	} {
		res, err := recall(ctx, llm.LocalCall{Agent: "keeper", Arguments: json.RawMessage(tc.args),
			Metadata: xmlpipe.Metadata{User: tc.user}})
		if err != nil || !strings.Contains(res.Content, tc.want) || strings.Contains(res.Content, tc.not) {
			t.Errorf("recall for %q: %+v %v", tc.user, res, err)
		}
	}
}

// TestHandleInputErrors: what is wrong with a Remember's content (empty,
// prohibited) is an *xmlpipe.InputError, told to its sender; a refusal
// about the sender or the organism's consent is not.
func TestHandleInputErrors(t *testing.T) {
	s, _, _ := testService(t, map[string]Consent{"keeper": ConsentAlways, "refuser": ConsentNever}, nil)
	tests := []struct {
		name, agent, content string
		want                 error
		input                bool
	}{
		{"empty content", "keeper", "  ", ErrContent, true},
		{"prohibited content", "keeper", "card 4111 1111 1111 1111", ErrProhibited, true},
		{"no memory", "stranger", "Alice likes tea", ErrNotAllowed, false},
		{"no consent", "refuser", "Alice likes tea", ErrNoConsent, false},
	}
	for _, tt := range tests {
		_, err := s.Handle(context.Background(), &Remember{Content: tt.content},
			xmlpipe.Metadata{From: tt.agent, ThreadID: "t1", User: "alice"})
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if _, input := errors.AsType[*xmlpipe.InputError](err); input != tt.input {
			t.Errorf("%s: %v is an input error: %t, want %t", tt.name, err, input, tt.input)
		}
	}
}

// Two identical remember calls in one model reply store one memory: the
// agent loop makes the tool's identical calls of a reply once
// (llm.LocalTool.Once; llm's TestLocalToolOnce shows the loop's side).
func TestRememberIsMadeOncePerReply(t *testing.T) {
	for _, tool := range (&Service{}).Tools() {
		if want := tool.Spec.Name == RememberTool; tool.Once != want {
			t.Errorf("%s: Once = %v, want %v", tool.Spec.Name, tool.Once, want)
		}
	}
}
