package organism

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// goneOrganism starts a durable organism on dir (in memory when dir is
// "") whose agents talk to m, configured by yaml (platform:, listeners:)
// with clock as its time.
func goneOrganism(t *testing.T, m *scriptedModel, dir, yaml string, clock func() time.Time) *Organism {
	t.Helper()
	t.Setenv("TEST_LLM_KEY", "sk-test")
	cfg, err := config.Parse("organism.yaml", []byte(fmt.Sprintf(`organism: {name: agents}
llm:
  retries: 0
  backends:
    - provider: openai
      api_key_env: TEST_LLM_KEY
      base_url: %s
      model: gpt-test
%s`, m.URL, yaml)))
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), DataDir: dir, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

// interimsOf collects the interim texts of conversation until the test
// ends.
type interimsOf struct {
	mu    sync.Mutex
	texts []string
}

func (w *interimsOf) watch(t *testing.T, o *Organism, conv string) {
	stop := o.WatchInterim(conv, func(i Interim) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.texts = append(w.texts, i.Text)
	})
	t.Cleanup(stop)
}

func (w *interimsOf) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.texts...)
}

// noted reports, for each request, whether a system message contains
// note and whether any message contains earlier.
func noted(reqs []chatLog, note, earlier string) (notes, earliers []bool) {
	for _, req := range reqs {
		var n, e bool
		for _, msg := range req.Messages {
			n = n || msg["role"] == "system" && strings.Contains(msg["content"], note)
			e = e || strings.Contains(msg["content"], earlier)
		}
		notes, earliers = append(notes, n), append(earliers, e)
	}
	return notes, earliers
}

// TestExpiryToldAfterRestart: a conversation whose history expired before
// a restart of a durable organism is continued after it: the model is
// told in a system note, and the user once, as before the restart —
// also at a second restart once the history began again.
func TestExpiryToldAfterRestart(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"poet": {"answer 1", "answer 2", "answer 3"}})
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	dir := t.TempDir()
	alice := pump.Principal{From: "api:alice", User: "alice"}
	thread := stage.NewThreadID()
	platform := "platform: {context_buffer: {ttl_hours: 1}}\n" + twoAgents
	shutdown := func(o *Organism) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), agentWait)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}

	o := goneOrganism(t, m, dir, platform, clock)
	if got, err := askAs(t, o, alice, "poet", thread, "my name is Dan"); err != nil || got != "answer 1" {
		t.Fatalf("first: %q, %v", got, err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if n := o.history.Collect(); n == 0 {
		t.Fatal("Collect removed no history")
	}
	shutdown(o)

	o = goneOrganism(t, m, dir, platform, clock)
	var told interimsOf
	told.watch(t, o, thread)
	if got, err := askAs(t, o, alice, "poet", thread, "what is my name?"); err != nil || got != "answer 2" {
		t.Fatalf("continuation after the restart: %q, %v", got, err)
	}
	shutdown(o)

	o = goneOrganism(t, m, dir, platform, clock)
	t.Cleanup(func() { shutdown(o) })
	told.watch(t, o, thread)
	if got, err := askAs(t, o, alice, "poet", thread, "and now?"); err != nil || got != "answer 3" {
		t.Fatalf("continuation after the second restart: %q, %v", got, err)
	}

	notes, earliers := noted(m.requests("poet"), "earlier history of this conversation expired (no message for 1h)",
		"my name is Dan")
	if want := []bool{false, true, true}; fmt.Sprint(notes) != fmt.Sprint(want) {
		t.Errorf("requests with the expiry note %v, want %v", notes, want)
	}
	if want := []bool{true, false, false}; fmt.Sprint(earliers) != fmt.Sprint(want) {
		t.Errorf("requests with the earlier history %v, want %v", earliers, want)
	}
	want := "[the earlier history of this conversation expired (no message for 1h, " +
		"platform.context_buffer.ttl_hours): poet does not remember it]"
	if got := told.get(); len(got) != 1 || got[0] != want {
		t.Errorf("interim texts %q, want exactly [%q]", got, want)
	}
}

// TestEvictionTold: a conversation whose history max_threads evicted (the
// organism keeps the histories of at most that many threads) is continued:
// the model is told in a system note that its earlier history was dropped
// and why, and the user once; the note survives a restart.
func TestEvictionTold(t *testing.T) {
	for _, tc := range []struct{ durable, restart, librarian bool }{
		{false, false, false}, {true, false, false}, {true, true, false}, {true, true, true},
	} {
		restart := tc.restart
		t.Run(fmt.Sprintf("durable=%v,restart=%v,librarian=%v", tc.durable, restart, tc.librarian), func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"poet": {"answer"}})
			dir := ""
			if tc.durable {
				dir = t.TempDir()
			}
			platform := "platform: {context_buffer: {max_threads: 2}}\n" + twoAgents
			if tc.librarian {
				platform = strings.Replace(platform, "    prompt: You are poet.\n",
					"    prompt: You are poet.\n    context_window: 8192\n    librarian: {}\n", 1)
			}
			alice := pump.Principal{From: "api:alice", User: "alice"}
			thread := stage.NewThreadID()
			o := goneOrganism(t, m, dir, platform, nil)
			if _, err := askAs(t, o, alice, "poet", thread, "my name is Dan"); err != nil {
				t.Fatal(err)
			}
			// Two more once it is evicted: the notes waiting are then as
			// many as the histories kept, and the continuation evicts one
			// more.
			for i, more := 0, 2; more > 0; i++ {
				if i == 10 {
					t.Fatal("10 other conversations did not evict the first one's history")
				}
				if _, err := askAs(t, o, alice, "poet", stage.NewThreadID(), fmt.Sprintf("other %d", i)); err != nil {
					t.Fatal(err)
				}
				if !o.history.ThreadExists(thread) {
					more--
				}
			}
			if restart {
				ctx, cancel := context.WithTimeout(context.Background(), agentWait)
				defer cancel()
				if err := o.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
				o = goneOrganism(t, m, dir, platform, nil)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), agentWait)
				defer cancel()
				if err := o.Shutdown(ctx); err != nil {
					t.Error(err)
				}
			})
			var told interimsOf
			told.watch(t, o, thread)
			before := len(m.requests("poet"))
			for _, text := range []string{"what is my name?", "and now?"} {
				if _, err := askAs(t, o, alice, "poet", thread, text); err != nil {
					t.Fatal(err)
				}
			}
			reqs := m.requests("poet")[before:]
			notes, earliers := noted(reqs, "The earlier history of this conversation was dropped", "my name is Dan")
			if want := []bool{true, true}; fmt.Sprint(notes) != fmt.Sprint(want) {
				t.Errorf("continuations with the eviction note %v, want %v", notes, want)
			}
			if want := []bool{false, false}; fmt.Sprint(earliers) != fmt.Sprint(want) {
				t.Errorf("continuations with the earlier history %v, want %v", earliers, want)
			}
			want := "[the earlier history of this conversation was dropped (the organism keeps the history of " +
				"at most 2 threads, platform.context_buffer.max_threads): poet does not remember it]"
			if got := told.get(); len(got) != 1 || got[0] != want {
				t.Errorf("interim texts %q, want exactly [%q]", got, want)
			}
			// The context tiers are those of the history begun again:
			// nothing of the evicted one is listed, folded or unfolded.
			tcx, ok := o.ThreadContext(thread)
			if !ok {
				t.Fatal("the continued conversation has no history")
			}
			segs := tcx.Segments()
			if tc.librarian && len(segs) == 0 {
				t.Error("the librarian's agent lists no segments")
			}
			for _, seg := range segs {
				for _, sl := range tcx.SegmentSlots(seg) {
					if strings.Contains(string(sl.Raw), "my name is Dan") {
						t.Errorf("segment %d holds the evicted history: %s", seg.Index, sl.Raw)
					}
				}
			}
			if n := len(tcx.Slots()); n != 4 {
				t.Errorf("the history begun again holds %d slots, want 4 (two messages, two answers)", n)
			}
		})
	}
}
