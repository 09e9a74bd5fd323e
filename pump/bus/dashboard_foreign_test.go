package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardSendsNewFromAnothersConversation: an operator who opens a
// conversation another user began (every role reads them all) is not told
// that the send box continues it — the server lets only its owner do that
// and answers anyone else with an opaque "Invalid envelope" — but that
// what they send begins a new conversation of their own, and it does.
func TestDashboardSendsNewFromAnothersConversation(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	olga := f.loginAs("olga", auth.Operator)
	theirs := f.inject(olga, "greeter", map[string]string{"name": "Kim"})
	secret := f.user("otto", auth.Operator)
	row := css(`#feed li[data-conversation="` + theirs + `"]`)
	run(t, ctx, "otto opens olga's conversation", chromedp.Steps(
		f.loginSteps("otto", secret),
		chromedp.WaitVisible(row),
		chromedp.Click(row),
		chromedp.WaitVisible(css("#envelopes li")),
	))
	waitText(t, ctx, "#send-target", func(s string) bool { return strings.Contains(s, "olga") })
	if got := textOf(t, ctx, "send target", css("#send-target")); strings.HasPrefix(got, "continues") {
		t.Errorf("the send box says %q for olga's conversation: otto cannot continue it", got)
	}
	run(t, ctx, "otto sends", chromedp.Steps(
		chromedp.SendKeys(css("#send-input"), "@greeter Ann"),
		chromedp.Click(css("#send-button")),
	))
	waitText(t, ctx, "#send-status", func(s string) bool { return s != "" && s != "sending…" })
	if got := textOf(t, ctx, "send status", css("#send-status")); got != "sent to greeter" {
		t.Fatalf("otto's message from olga's open conversation: %q, want it sent, as a new conversation", got)
	}
	mine := run(t, ctx, "the new thread", chromedp.Evaluate[string](`document.querySelector("#send-status").dataset.thread || ""`))
	if mine == "" || mine == theirs {
		t.Errorf("otto's message went to thread %q, want a new conversation, not olga's %s", mine, theirs)
	}
}
