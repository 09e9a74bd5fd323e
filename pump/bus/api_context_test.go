package bus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// librarianOrganism builds an organism whose agent poet, with a librarian
// and a small context window, talks to the model at url.
func librarianOrganism(url string) buildFunc {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
llm:
  retries: 0
  backends:
    - {provider: openai, name: local, base_url: `+url+`, model: test-model}
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
    context_window: 1024
    librarian: {keep_recent: 1, min_fold_tokens: 16}
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}

// TestAPIThreadContext: GET /api/v1/threads/{id}/context shows an agent's
// conversation as segments with their tiers — the long early message
// folded, with the summary the model saw in its place, the recent ones
// expanded — and ?content=full gives the folded segment's original bytes.
// An unknown thread is 404, a bad content 400, no token 401.
func TestAPIThreadContext(t *testing.T) {
	model := llmtest.NewChatModel(t, func(n int) []string { return []string{fmt.Sprintf("Noted (%d).", n)} })
	f := newFixtureWith(t, librarianOrganism(model.URL))
	tokens := f.tokens()
	op, viewer := tokens[auth.Operator], tokens[auth.Viewer]
	completed := f.watchCompletions()
	long := "Minutes of the harbour board. " + strings.Repeat("The board discussed the dredging of the channel. ", 80) +
		"Budget approved: 1200 crowns."
	thread := ""
	for _, text := range []string{long, "Write about rain.", "Write about snow.", "Write about wind."} {
		body := map[string]any{"to": "poet", "payload": map[string]string{"text": text}}
		if thread != "" {
			body["thread_id"] = thread
		}
		status, got, _ := f.do("POST", "/api/v1/inject", op, body)
		if status != 200 {
			t.Fatalf("inject: %d %v", status, got)
		}
		thread = got["thread_id"].(string)
		completed.wait(t, thread)
	}
	status, ctx, _ := f.do("GET", "/api/v1/threads/"+thread+"/context", viewer, nil)
	if status != 200 {
		t.Fatalf("context: %d %v", status, ctx)
	}
	segs := ctx["segments"].([]any)
	first := segs[0].(map[string]any)
	if first["id"] != "s0" || first["tier"] != "folded" || first["content_type"] != "message" || first["from"] != "api:user-operator" {
		t.Fatalf("first segment %v", first)
	}
	summary, _ := first["summary"].(string)
	if !strings.HasPrefix(summary, "Minutes of the harbour board.") || first["summary_by"] != "extractive" ||
		first["byte_size"].(float64) < float64(len(long)) {
		t.Errorf("first segment %v", first)
	}
	if _, has := first["content"]; has {
		t.Error("content without ?content=full")
	}
	if !llmtest.Has(model.Request(t, model.Count()-1), "user", summary) {
		t.Error("the model's last request does not hold the fold summary")
	}
	last := segs[len(segs)-1].(map[string]any)
	if last["tier"] != "expanded" {
		t.Errorf("last segment %v", last)
	}
	tiers := ctx["tiers"].(map[string]any)
	if tiers["folded"].(float64) < 1 || tiers["expanded"].(float64) < 2 || int(tiers["folded"].(float64)+
		tiers["expanded"].(float64)+tiers["evicted"].(float64)) != len(segs) {
		t.Errorf("tiers %v of %d segments", tiers, len(segs))
	}

	status, full, _ := f.do("GET", "/api/v1/threads/"+thread+"/context?content=full", viewer, nil)
	if status != 200 {
		t.Fatalf("context=full: %d %v", status, full)
	}
	content, _ := full["segments"].([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(content, long) {
		t.Errorf("the folded segment's content is not the original: %.120q", content)
	}
	for _, c := range []struct {
		path, token string
		status      int
	}{
		{"/api/v1/threads/" + thread + "/context?content=all", viewer, 400},
		{"/api/v1/threads/00000000-0000-4000-8000-000000000000/context", viewer, 404},
		{"/api/v1/threads/" + thread + "/context", "", 401},
	} {
		if status, body, _ := f.do("GET", c.path, c.token, nil); status != c.status {
			t.Errorf("GET %s: %d %v, want %d", c.path, status, body, c.status)
		}
	}
}

// checkContextFits fails t when the open conversation's context table is
// wider than its panel (its Summary column was cut off, the panel
// scrolling sideways).
func checkContextFits(t *testing.T, ctx context.Context) {
	t.Helper()
	overflow := run(t, ctx, "context table width", chromedp.Evaluate[string](`(() => {
		const panel = document.querySelector("#thread"), table = document.querySelector("#context");
		const over = Math.round(table.getBoundingClientRect().right - panel.getBoundingClientRect().right);
		return over > 0 || panel.scrollWidth > panel.clientWidth ?
			"table " + over + "px past the panel, panel scrolls " + (panel.scrollWidth - panel.clientWidth) + "px" : "";
	})()`))
	if overflow != "" {
		t.Errorf("the context table overflows its panel: %s", overflow)
	}
}

// TestDashboardShowsContextTiers: the dashboard's open conversation lists
// its agent's context segments with their tiers — the long early message
// folded, with its summary.
func TestDashboardShowsContextTiers(t *testing.T) {
	model := llmtest.NewChatModel(t, func(n int) []string { return []string{fmt.Sprintf("Noted (%d).", n)} })
	f := newFixtureWith(t, librarianOrganism(model.URL))
	ctx := browser(t)
	op := f.loginAs("olga", auth.Operator)
	completed := f.watchCompletions()
	thread := ""
	for _, text := range []string{"Minutes of the harbour board. " + strings.Repeat("The board discussed the dredging. ", 80),
		"Write about rain.", "Write about snow."} {
		body := map[string]any{"to": "poet", "payload": map[string]string{"text": text}}
		if thread != "" {
			body["thread_id"] = thread
		}
		status, got, _ := f.do("POST", "/api/v1/inject", op, body)
		if status != 200 {
			t.Fatalf("inject: %d %v", status, got)
		}
		thread = got["thread_id"].(string)
		completed.wait(t, thread)
	}
	f.waitJournal()
	viewerSecret := f.user("vic", auth.Viewer)
	conv := css(`#feed li[data-conversation="` + thread + `"]`)
	folded := css(`#context tr[data-segment="s0"][data-tier="folded"]`)
	run(t, ctx, "open the conversation", chromedp.Steps(
		f.loginSteps("vic", viewerSecret),
		chromedp.WaitVisible(conv),
		chromedp.Click(conv),
		chromedp.WaitVisible(folded),
	))
	row := textOf(t, ctx, "folded row", folded)
	if !strings.Contains(row, "Minutes of the harbour board.") || !strings.Contains(row, "message from api:olga") {
		t.Errorf("folded row %q", row)
	}
	tiers := run(t, ctx, "tiers", chromedp.Evaluate[string](
		`Array.from(document.querySelectorAll("#context tr[data-tier]")).map(tr => tr.dataset.tier).join(",")`))
	if !strings.HasPrefix(tiers, "folded,") || !strings.HasSuffix(tiers, ",expanded") {
		t.Errorf("tiers %q", tiers)
	}
	// The table fits its panel (its Summary column was cut off): a long
	// summary is cut with an ellipsis and reads whole in its title.
	checkContextFits(t, ctx)
	title := run(t, ctx, "summary title", chromedp.Evaluate[string](
		`document.querySelector('#context tr[data-segment="s0"] td.summary')?.title ?? "no td.summary"`))
	if !strings.Contains(title, "Minutes of the harbour board.") {
		t.Errorf("the folded summary's title %q does not hold its full text", title)
	}
	// …and its column is wide enough to read (the fixed columns left it none).
	if w := run(t, ctx, "summary width", chromedp.Evaluate[float64](
		`document.querySelector('#context tr[data-segment="s0"] td.summary')?.getBoundingClientRect().width ?? 0`)); w < 80 {
		t.Errorf("the summary column is %.0fpx wide, want at least 80", w)
	}
	png := run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, "dashboard-context.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
