package bus

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardSaysWhyAnActionWasRefused: an admin's kill button on a
// conversation that another operator (ctl, the console, REST) killed
// since the dashboard last drew it is refused by the server; the
// dashboard says so, with the server's reason, instead of doing nothing.
func TestDashboardSaysWhyAnActionWasRefused(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	ada := f.login("ada", secret)

	// shouter paused: greeter's answer waits for it, so the conversation
	// stays active and the feed offers to kill it.
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause shouter: %d %v", status, body)
	}
	thread := f.inject(ada, "greeter", map[string]string{"name": "Kim"})
	kill := css(`#feed li[data-conversation="` + thread + `"] button[data-stop="kill"]`)
	run(t, ctx, "the conversation's kill button", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(kill),
	))
	// The view is not redrawn from here on: what the admin sees is what
	// the dashboard last drew.
	run(t, ctx, "stop the redraws", chromedp.Evaluate[bool](`clearInterval(state.ticker), true`))

	// Someone else kills it first.
	if status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/kill", ada, nil); status != 200 {
		t.Fatalf("kill: %d %v", status, body)
	}

	run(t, ctx, "click the stale kill button", chromedp.Steps(
		chromedp.Click(kill),
		chromedp.WaitVisible(css("#action-error")),
	))
	got := textOf(t, ctx, "the refusal", css("#action-error"))
	if want := "kill " + thread[:8] + ": Conversation already killed"; got != want {
		t.Errorf("the dashboard says %q, want %q", got, want)
	}
}

// TestDashboardHaltsOneListener: an admin's halt button on an agent row
// halts that listener alone (the organism still runs) and turns into
// unhalt, which lifts it.
func TestDashboardHaltsOneListener(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	halt := css(`#agents button[data-halt="shouter"]`)
	run(t, ctx, "the shouter's halt button", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(halt),
	))
	if got := run(t, ctx, "its text", chromedp.Text(halt)); got != "halt" {
		t.Fatalf("button %q, want halt", got)
	}
	run(t, ctx, "click halt", chromedp.Click(halt))
	waitText(t, ctx, `#agents button[data-halt="shouter"]`, func(s string) bool { return s == "unhalt" })
	if got := f.org.Pump.HaltedListeners(); len(got) != 1 || got[0] != "shouter" {
		t.Fatalf("halted listeners %v, want [shouter]", got)
	}
	if got := run(t, ctx, "organism status", chromedp.Text(css("#org-status"))); got != "running" {
		t.Errorf("organism status %q while one listener is halted, want running", got)
	}
	run(t, ctx, "click unhalt", chromedp.Click(halt))
	waitText(t, ctx, `#agents button[data-halt="shouter"]`, func(s string) bool { return s == "halt" })
	if got := f.org.Pump.HaltedListeners(); len(got) != 0 {
		t.Fatalf("halted listeners after unhalt %v", got)
	}
}
