package bus

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardSaysWhenToRetryBusy: a message the organism is too busy
// to take is answered in the send box with why and when to try again (the
// error frame's retry_after), and what was typed stays in the box to be
// sent again.
func TestDashboardSaysWhenToRetryBusy(t *testing.T) {
	f := newFixtureWith(t, smallBudget)
	ada := f.loginAs("ada", auth.Admin)
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	for range 2 { // shouter's share of the budget
		f.inject(ada, "shouter", shoutPayload)
	}
	ctx := browser(t)
	secret := f.user("olga", auth.Operator)
	run(t, ctx, "send to the stalled shouter", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css("#connection[data-state=connected]")),
		chromedp.SendKeys(css("#send-input"), "@shouter hi"),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status.error")),
	))
	want := "Organism busy: listener shouter busy — try again in 1 s"
	if got := textOf(t, ctx, "send status", css("#send-status")); got != want {
		t.Errorf("the send box says %q, want %q", got, want)
	}
	if got := run(t, ctx, "the send box", chromedp.Evaluate[string](`document.querySelector("#send-input").value`)); got != "@shouter hi" {
		t.Errorf("the send box holds %q after the refusal, want what was typed", got)
	}
}
