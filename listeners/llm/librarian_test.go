package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// chatFunc is a Chatter answering each request with a function of it; it
// checks every request as the Router does and keeps it.
type chatFunc struct {
	t    testing.TB
	fn   func(r Request) Reply
	mu   sync.Mutex
	reqs []Request
}

func (m *chatFunc) Chat(_ context.Context, r Request) (Reply, error) {
	if err := r.Validate(); err != nil {
		m.t.Errorf("the agent sent an invalid request: %v", err)
		return Reply{}, err
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, r)
	m.mu.Unlock()
	return m.fn(r), nil
}

func (m *chatFunc) requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// librarianRig is a loop rig whose agent has a librarian and a model that
// is a function of the request.
func librarianRig(t *testing.T, window int, lib *Librarian, fn func(r Request) Reply) (*loopRig, *chatFunc) {
	r := newLoopRig(t, Reply{Content: "unused"})
	m := &chatFunc{t: t, fn: fn}
	r.a.LLM, r.a.ContextWindow, r.a.Librarian = m, window, lib
	return r, m
}

// noted is a model answering "Noted (n)." (the progress guard halts a
// turn that repeats the last ones).
func noted() func(Request) Reply {
	var mu sync.Mutex
	n := 0
	return func(Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		n++
		return Reply{Content: fmt.Sprintf("Noted (%d).", n)}
	}
}

// requestTokens estimates a request as the librarian budgets it.
func requestTokens(r Request) int {
	return overheadTokens(nil, r.Tools, r.Output) + func() int {
		n := 0
		for _, m := range r.Messages {
			n += messageTokens(m)
		}
		return n
	}()
}

// tiers lists the recorded tiers of thread "t" by segment id.
func tiers(t *testing.T, cb *registry.ContextBuffer) map[string]registry.Segment {
	t.Helper()
	tc, ok := cb.Thread("t")
	if !ok {
		t.Fatal("no history")
	}
	out := map[string]registry.Segment{}
	for _, s := range tc.Recorded() {
		out[s.ID] = s
	}
	return out
}

// lastText is the text of a request's last user message.
func lastText(r Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == User {
			return r.Messages[i].Content
		}
	}
	return ""
}

// TestLibrarianFoldsByRelevance: a question about one topic leaves the
// segments about it, the current turn and the recent ones in full, folds
// the large unrelated ones into notes naming them and context_unfold, and
// records every segment's tier; a later question about a folded topic
// unfolds it again. Every request is valid (calls stay with results).
func TestLibrarianFoldsByRelevance(t *testing.T) {
	topics := []string{
		"Gardening notes. Tomatoes need full sun and deep watering; prune the suckers weekly and stake the vines early.",
		"Sailing notes. Reef the mainsail before the wind builds; check the halyards, the shackles and the bilge pump.",
		"Baking notes. Sourdough wants a lively starter, a long cold proof in the fridge and a very hot dutch oven.",
	}
	r, m := librarianRig(t, 128000, &Librarian{FoldBelow: 0.08, UnfoldAbove: 0.2, KeepRecent: 1, MinFoldTokens: 40},
		noted())
	for _, topic := range topics {
		r.deliver("console", strings.Repeat(topic+"\n", 4), "")
	}
	r.deliver("console", "One more thing about the weather: it rained.", "")
	r.deliver("console", "How should I proof my sourdough starter and bake it?", "")
	reqs := m.requests()
	last := reqs[len(reqs)-1]
	var folded []string
	for _, msg := range last.Messages {
		if strings.Contains(msg.Content, "folded —") {
			folded = append(folded, msg.Content)
		}
	}
	if len(folded) != 2 || !strings.Contains(folded[0], "[s0 folded — message from console") ||
		!strings.Contains(folded[0], `[folded: call context_unfold("s0") to read it]`) ||
		!strings.Contains(folded[0], "Gardening notes.") || !strings.Contains(folded[1], "[s2 folded") {
		t.Fatalf("folded notes %q", folded)
	}
	if !strings.Contains(fmt.Sprint(last.Messages), "dutch oven") {
		t.Error("the relevant segment was folded")
	}
	if !strings.Contains(fmt.Sprint(last.Messages), "it rained") {
		t.Error("the recent segment was folded")
	}
	var names []string
	for _, tool := range last.Tools {
		names = append(names, tool.Name)
	}
	if names[0] != "context_unfold" {
		t.Errorf("tools %v", names)
	}
	got := tiers(t, r.cb)
	if got["s0"].Tier != registry.TierFolded || got["s2"].Tier != registry.TierFolded ||
		got["s4"].Tier != registry.TierExpanded || got["s0"].SummaryBy != extractiveBy || got["s0"].ContentType != contentMessage ||
		got["s4"].Relevance <= got["s0"].Relevance || got["s0"].Bytes == 0 || got["s0"].Tokens == 0 {
		t.Fatalf("tiers %+v", got)
	}
	// The sailing notes become relevant: unfolded.
	r.deliver("console", "Which sailing checks: the halyards, shackles, bilge pump, mainsail reef?", "")
	if got := tiers(t, r.cb); got["s2"].Tier != registry.TierExpanded || got["s0"].Tier != registry.TierFolded {
		t.Fatalf("after the sailing question: s0 %s, s2 %s", got["s0"].Tier, got["s2"].Tier)
	}
}

// TestLibrarianBudget: a conversation larger than the window is folded
// and then evicted, oldest first, to fit: the evicted ones are listed in a
// note at the front, the latest segment stays, calls stay with their
// results, and every request fits the budget.
func TestLibrarianBudget(t *testing.T) {
	n := 0
	r, m := librarianRig(t, 2048, &Librarian{KeepRecent: 2}, func(req Request) Reply {
		n++
		if n%3 == 1 {
			return Reply{ToolCalls: []ToolCall{toolCall(fmt.Sprintf("p%d", n), "poet", `{"Text":"rain"}`)}}
		}
		return Reply{Content: fmt.Sprintf("%d: %s", n, strings.Repeat("A long answer about nothing in particular. ", 10))}
	})
	for i := range 12 {
		resp := r.deliver("console", fmt.Sprintf("Message %d: %s", i, strings.Repeat("filler words go here ", 40)), "")
		if sends, ok := resp.(*xmlpipe.SendsResponse); ok {
			r.deliver("poet", strings.Repeat("verse ", 200), sends.Sends[0].Ref)
		}
	}
	budget := 2048 - completionReserve(2048, 0)
	for i, req := range m.requests() {
		if got := requestTokens(req); got > budget {
			t.Errorf("request %d: %d tokens, budget %d", i, got, budget)
		}
	}
	last := m.requests()[len(m.requests())-1]
	note := last.Messages[3].Content // after the constitution, the prompt and the tools
	if !regexp.MustCompile(`^\[\d+ earlier segments of this conversation evicted to fit the context window: s0, s1, `).MatchString(note) ||
		!strings.Contains(note, "context_unfold") {
		t.Fatalf("eviction note %q", note)
	}
	if !strings.HasPrefix(lastText(last), "[From poet]") && !strings.Contains(lastText(last), "Message 11") {
		t.Errorf("the latest segment is missing: %q", lastText(last))
	}
	got := tiers(t, r.cb)
	if got["s0"].Tier != registry.TierEvicted {
		t.Errorf("s0 is %s, want evicted", got["s0"].Tier)
	}
	counts := map[registry.Tier]int{}
	for _, s := range got {
		counts[s.Tier]++
	}
	if counts[registry.TierEvicted] == 0 || counts[registry.TierExpanded] == 0 {
		t.Errorf("tiers %v", counts)
	}
}

// TestContextUnfold: a folded segment holding a large non-ASCII text comes
// back through context_unfold exactly — page by page, each page giving the
// offset of the next — and is recorded expanded; an unknown id, bad
// arguments and a past-the-end offset are answered as failed calls; no id
// lists the folded segments.
func TestContextUnfold(t *testing.T) {
	text := strings.Repeat("Grüße aus 東京 — ünïcødé ✓ line\n", 1000)
	var pages []string
	step := 0
	r, m := librarianRig(t, 4096, &Librarian{}, func(req Request) Reply {
		step++
		switch {
		case step == 1:
			return Reply{Content: "Noted."}
		case step == 2:
			return Reply{Content: "Noted again."}
		case step == 3:
			return Reply{Content: "Noted once more."}
		case step == 4:
			return Reply{ToolCalls: []ToolCall{toolCall("u0", unfoldTool, `{}`)}}
		case step == 5:
			return Reply{ToolCalls: []ToolCall{toolCall("u1", unfoldTool, `{"id":"s0"}`),
				toolCall("bad1", unfoldTool, `{"id":"s999"}`), toolCall("bad2", unfoldTool, `{"ids":"s0"}`),
				toolCall("bad3", unfoldTool, `{"id":"s0","offset":999999999}`)}}
		}
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == Tool; i-- {
			res := req.Messages[i]
			if !strings.HasPrefix(res.Content, "Part s0 ") {
				continue
			}
			pages = append(pages, res.Content)
			if mm := regexp.MustCompile(`\{"id":"s0","offset":(\d+)\}`).FindStringSubmatch(res.Content); mm != nil {
				return Reply{ToolCalls: []ToolCall{toolCall(fmt.Sprintf("u%d", step), unfoldTool, mm[0])}}
			}
		}
		return Reply{Content: "Read it all."}
	})
	r.deliver("console", text, "")
	r.deliver("console", "short", "")
	r.deliver("console", "short again", "")
	if got := tiers(t, r.cb); got["s0"].Tier == registry.TierExpanded {
		t.Fatalf("the large message was not folded: %+v", got["s0"])
	}
	if got := answerText(r.deliver("console", "now read it all", "")); got != "Read it all." {
		t.Fatalf("answer %q", got)
	}
	reqs := m.requests()
	list := toolResult(t, reqs, "u0")
	if !strings.Contains(list.Content, "s0 (folded; message from console") {
		t.Errorf("list %q", list.Content)
	}
	for id, want := range map[string]string{"bad1": `there is no part "s999"`, "bad2": `not "ids"`, "bad3": "past the end"} {
		if res := toolResult(t, reqs, id); !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("%s: %+v", id, res)
		}
	}
	// The pages put back together are the message exactly.
	var b strings.Builder
	header := regexp.MustCompile(`^Part s0 \(message from console, [0-9.]+ KB\) unfolded, bytes (\d+) to (\d+) of (\d+):\n`)
	if first := toolResult(t, reqs, "u1").Content; first != pages[0] {
		t.Fatalf("first page %.80q", first)
	}
	for i, p := range pages {
		h := header.FindStringSubmatch(p)
		if h == nil {
			t.Fatalf("page %d header: %.120q", i, p)
		}
		body := strings.TrimPrefix(p, h[0])
		if k := strings.LastIndex(body, "\n"+unfoldMoreMark); k >= 0 {
			body = body[:k]
		}
		if fmt.Sprint(b.Len()) != h[1] {
			t.Fatalf("page %d begins at %s, want %d", i, h[1], b.Len())
		}
		b.WriteString(body)
	}
	if b.String() != "[From console]\n"+text {
		t.Fatalf("unfolded text differs: %d bytes, want %d", b.Len(), len("[From console]\n"+text))
	}
	if len(pages) < 3 {
		t.Errorf("%d pages; the text should take several", len(pages))
	}
}

// toolResult finds the result of call id in the first request holding it.
func toolResult(t *testing.T, reqs []Request, id string) Message {
	t.Helper()
	for _, req := range reqs {
		for _, m := range req.Messages {
			if m.Role == Tool && m.ToolCallID == id {
				return m
			}
		}
	}
	t.Fatalf("no result for %s in %d requests", id, len(reqs))
	return Message{}
}

// vaultNotes is a long message whose one fact sits deep inside (past the
// first page an unfold gives), in a line the extractive summary does not
// keep.
func vaultNotes() string {
	var b strings.Builder
	b.WriteString("Here are my field notes from the trip to the coast.\n")
	for range 40 {
		b.WriteString("We walked along the river and watched the herons fish in the shallows.\n")
	}
	b.WriteString("The vault code is KESTREL-ALPHA and nobody else knows it.\n")
	for range 8 {
		b.WriteString("The evening light on the water was lovely and calm.\n")
	}
	return b.String()
}

// unfoldingModel is a loopback model that remembers by unfolding: asked
// about the vault code, it answers from a tool result that holds it, else
// calls context_unfold on the id of a folded note (reading on with the
// offset a page gives), else says it does not know.
func unfoldingModel(req Request) Reply {
	fact := regexp.MustCompile(`vault code is ([A-Z]+-[A-Z]+)`)
	if !strings.Contains(lastText(req), "What is the vault code") && req.Messages[len(req.Messages)-1].Role != Tool {
		return Reply{Content: fmt.Sprintf("Noted (%d).", len(req.Messages))}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != Tool {
			break
		}
		if f := fact.FindStringSubmatch(m.Content); f != nil {
			return Reply{Content: "The vault code is " + f[1] + "."}
		}
		if mm := regexp.MustCompile(`\{"id":"s\d+","offset":\d+\}`).FindString(m.Content); mm != "" {
			return Reply{ToolCalls: []ToolCall{toolCall(fmt.Sprintf("r%d", len(req.Messages)), unfoldTool, mm)}}
		}
	}
	for _, m := range req.Messages {
		if id := regexp.MustCompile(`context_unfold\("(s\d+)"\)`).FindStringSubmatch(m.Content); id != nil &&
			strings.Contains(m.Content, "folded —") {
			return Reply{ToolCalls: []ToolCall{toolCall("u-"+id[1], unfoldTool, fmt.Sprintf(`{"id":%q}`, id[1]))}}
		}
	}
	return Reply{Content: "I do not know."}
}

// TestSmallBudgetRemembersByUnfolding: an agent whose context window is
// smaller than its conversation still answers a question about an early
// message — folded to fit, its fact not in the summary — by unfolding it
// (reading on page by page), and every request after the first turn fits
// the budget. Without a librarian the same agent does not know.
func TestSmallBudgetRemembersByUnfolding(t *testing.T) {
	const window = 2048
	chatter := []string{"What a nice day it was today.", "Tomorrow we sail to the island at dawn.",
		"Remind me to buy bread and milk.", "The neighbours are painting their fence green.",
		"My sister calls on Sundays.", "The train was late again this morning."}
	run := func(lib *Librarian) (string, *chatFunc, int) {
		r, m := librarianRig(t, window, lib, unfoldingModel)
		r.peers = nil
		r.deliver("console", vaultNotes(), "")
		for _, s := range chatter {
			r.deliver("console", s, "")
		}
		asked := len(m.requests())
		return answerText(r.deliver("console", "What is the vault code from my notes?", "")), m, asked
	}
	got, m, asked := run(&Librarian{FoldBelow: 0.08, UnfoldAbove: 0.2, KeepRecent: 1, MinFoldTokens: 64})
	if got != "The vault code is KESTREL-ALPHA." {
		t.Fatalf("answer %q", got)
	}
	reqs := m.requests()
	budget := window - completionReserve(window, 0)
	for i, req := range reqs {
		if got := requestTokens(req); got > budget {
			t.Errorf("request %d: %d tokens, budget %d", i, got, budget)
		}
	}
	if strings.Contains(fmt.Sprint(reqs[asked].Messages), "KESTREL") {
		t.Error("the fact was in the context before the model unfolded it")
	}
	pages := 0
	for _, req := range reqs[asked:] {
		if last := req.Messages[len(req.Messages)-1]; last.Role == Tool && strings.HasPrefix(last.Content, "Part s0 ") {
			pages++
		}
	}
	if pages < 2 {
		t.Errorf("%d pages read, want the fact on the second", pages)
	}
	if got, _, _ := run(nil); got != "I do not know." {
		t.Fatalf("without a librarian: %q", got)
	}
}

// TestLibrarianModelSummaries: with a model, folded segments get its
// summaries (at most MaxSummaries a curation, newest first), attributed to
// the librarian; a failed summary leaves the extractive one.
func TestLibrarianModelSummaries(t *testing.T) {
	var mu sync.Mutex
	var asked []Request
	summariser := &chatFunc{t: t, fn: func(r Request) Reply {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		if strings.Contains(r.Messages[1].Content, "Sailing") {
			return Reply{} // empty: a failed summary
		}
		return Reply{Content: "  A   constructed   memory.  "}
	}}
	lib := &Librarian{Model: "cheap", LLM: summariser, FoldBelow: 0.08, UnfoldAbove: 0.2, MinFoldTokens: 10, MaxSummaries: 5}
	r, _ := librarianRig(t, 128000, lib, func(Request) Reply { return Reply{Content: "ok"} })
	r.deliver("console", strings.Repeat("Gardening notes: tomatoes need sun and water.\n", 8), "")
	r.deliver("console", strings.Repeat("Sailing notes: reef early, check the halyards.\n", 8), "")
	r.deliver("console", "Something else entirely: quantum chromodynamics?", "")
	got := tiers(t, r.cb)
	if got["s0"].Summary != "A constructed memory." || got["s0"].SummaryBy != "cheap" {
		t.Errorf("s0 %+v", got["s0"])
	}
	if got["s2"].SummaryBy != extractiveBy || !strings.HasPrefix(got["s2"].Summary, "Sailing notes") {
		t.Errorf("s2 %+v", got["s2"])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[0].Model != "cheap" || asked[0].Agent != librarianAgent || asked[0].Thread != "t" ||
		len(asked[0].Tools) != 0 {
		t.Errorf("summary requests %+v", asked)
	}
}

// TestExtractive: the first sentence, then key lines, within the bound,
// markup read as text, cut on a rune boundary.
func TestExtractive(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		max        int
		want       string
	}{
		{"first sentence", "The plan is simple. Then more words follow here.", 100, "The plan is simple."},
		{"key lines", "Notes from today.\nnothing here\nTotal: 42 apples\nanother plain line", 100, "Notes from today. … Total: 42 apples"},
		{"markup", "<Report><Title>Q3 results.</Title><Body>Revenue grew.</Body></Report>", 100, "Q3 results. … Revenue grew."},
		{"cut", "Übergrößenträger sind überall zu finden und niemand weiß warum das so ist.", 24, "Übergrößenträg…"},
		{"empty", "   ", 100, ""},
	} {
		if got := extractive(tt.text, tt.max); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestRelevance: the segment sharing the query's rare terms scores
// highest; one sharing nothing scores 0; scores stay within 0…1.
func TestRelevance(t *testing.T) {
	var x lexicon
	v := func(s string) docVec { return x.vector(docKey{}, s) }
	docs := []docVec{v("The vault code is hidden in the garden shed."), v("Tomatoes grow in the garden."),
		v("Completely unrelated sailing chatter."), v(""), v("VAULT codes, Vault-Code!")}
	s := relevance(docs, v("Where is the vault code?"))
	if !(s[0] > 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 && s[4] > s[0] && s[4] <= 1) {
		t.Errorf("scores %v", s)
	}
	if s := relevance(docs, v("the of and")); s[0] != 0 {
		t.Errorf("stop words scored %v", s)
	}
	// Cached by key: the same key gives the same vector, whatever the text.
	a := x.vector(docKey{thread: "t", index: 1, size: 3}, "garden")
	b := x.vector(docKey{thread: "t", index: 1, size: 3}, "sailing")
	if len(a.ids) != 1 || a.ids[0] != b.ids[0] {
		t.Errorf("cache: %v %v", a, b)
	}
}

// TestUnfoldArgs reads context_unfold's arguments.
func TestUnfoldArgs(t *testing.T) {
	for _, tt := range []struct {
		args   string
		id     string
		offset int
		bad    bool
	}{
		{`{"id":"s3"}`, "s3", 0, false}, {`{"id":" s3 ","offset":40}`, "s3", 40, false}, {`{}`, "", 0, false}, {``, "", 0, false},
		{`{"id":3}`, "", 0, true}, {`{"offset":-1}`, "", 0, true}, {`{"id":"s1","more":1}`, "", 0, true}, {`[1]`, "", 0, true},
	} {
		id, off, err := unfoldArgs([]byte(tt.args))
		if (err != nil) != tt.bad || id != tt.id || off != tt.offset {
			t.Errorf("unfoldArgs(%s) = %q, %d, %v", tt.args, id, off, err)
		}
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(unfoldParams), &schema); err != nil {
		t.Fatal(err)
	}
}
