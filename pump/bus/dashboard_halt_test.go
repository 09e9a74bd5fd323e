package bus

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/listeners/llm/llmtest"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardShowsAHaltedCall: in a browser, an emergency halt while an
// agent's model call streams leaves the agent's live block with the text
// shown and the note that the halt cut it off — never an empty "[poet] "
// block — and the model calls table lists the aborted call, with the
// tokens it spent marked "≈" (an estimate: no usage came), though nothing
// was journaled; after the resume the call asked again is listed as
// completed, its tokens the model's own, unmarked.
func TestDashboardShowsAHaltedCall(t *testing.T) {
	m := llmtest.NewChatModel(t, func(n int) []string { return []string{"Rain on tin", " roofs, answer " + string(rune('1'+n))} })
	m.Hold = make(chan struct{})
	t.Cleanup(func() { close(m.Hold) })
	f := newFixtureWith(t, agentOrganism(m.URL))
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)
	ada := f.loginAs("ada", auth.Admin)

	run(t, ctx, "login, send", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css("#send-input")),
		chromedp.SendKeys(css("#send-input"), "@poet rain"),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	<-m.First
	waitText(t, ctx, "#live", func(s string) bool { return s == "[poet] Rain on tin" })
	if status, body, _ := f.do("POST", "/api/v1/organism/halt", ada, map[string]string{"scope": "all"}); status != http.StatusOK {
		t.Fatalf("halt: %d %v", status, body)
	}

	waitText(t, ctx, "#live", func(s string) bool { return strings.Contains(s, "cut off by a halt") })
	blocks := func() []string {
		return run(t, ctx, "live blocks", chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#live pre")].map((p) => p.textContent)`))
	}
	if got := blocks(); len(got) != 1 || !strings.HasPrefix(got[0], "[poet] Rain on tin\n[the reply was cut off by a halt") {
		t.Errorf("live blocks during the halt %q: want poet's text and the halt's note, one block", got)
	}
	waitText(t, ctx, "#calls tbody", func(s string) bool { return strings.Contains(s, "aborted") })
	row := textOf(t, ctx, "call row", css(`#calls tbody tr td[data-outcome="aborted"]`))
	if row != "aborted" {
		t.Errorf("outcome cell %q", row)
	}
	tokens := textOf(t, ctx, "tokens", css("#calls tbody tr td:nth-child(3)"))
	if tokens == "0 + 0" || !strings.HasPrefix(tokens, "≈") {
		t.Errorf("the aborted call's tokens %q: want what it spent, marked ≈ (an estimate)", tokens)
	}
	if title := run(t, ctx, "tokens title", chromedp.Evaluate[string](
		`document.querySelector("#calls tbody tr td:nth-child(3)").title`)); !strings.Contains(title, "estimate") {
		t.Errorf("the aborted call's tokens tooltip %q: want it to say they are an estimate", title)
	}

	if status, body, _ := f.do("POST", "/api/v1/organism/resume", ada, nil); status != http.StatusOK {
		t.Fatalf("resume: %d %v", status, body)
	}
	waitText(t, ctx, "#envelopes", func(s string) bool { return strings.Contains(s, "Rain on tin roofs, answer 2") })
	waitText(t, ctx, "#calls tbody", func(s string) bool { return strings.Contains(s, "stop") })
	outcomes := run(t, ctx, "outcomes", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#calls tbody td[data-outcome]")].map((td) => td.dataset.outcome)`))
	if len(outcomes) != 2 || outcomes[0] != "aborted" || outcomes[1] != "completed" {
		t.Errorf("call outcomes %v: want aborted, completed", outcomes)
	}
	if tokens := textOf(t, ctx, "tokens", css("#calls tbody tr:nth-child(2) td:nth-child(3)")); tokens != "11 + 7" {
		t.Errorf("the completed call's tokens %q: want the model's own usage, 11 + 7, unmarked", tokens)
	}
	for _, b := range blocks() {
		if strings.TrimSpace(strings.TrimPrefix(b, "[poet]")) == "" {
			t.Errorf("an empty live block %q after the resume", b)
		}
	}
}
