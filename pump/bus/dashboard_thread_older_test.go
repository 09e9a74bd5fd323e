package bus

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardThreadsOlder: the conversation list steps to older
// conversations and back (the thread list's cursor), also with "failed
// only" ticked, which lists the failed ones, newest first, and steps
// through them the same way. While the organism is down the header says
// it is unreachable and retrying — not the browser's "Failed to fetch" —
// and the list drawn before stays on screen.
func TestDashboardThreadsOlder(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	all := fillThreadList(t, f, 700) // 141 threads and a long one, each its own conversation
	var failed []threadListRow
	for _, r := range all {
		if r.Status == "error" {
			failed = append(failed, r)
		}
	}
	if len(failed) < 61 {
		t.Fatalf("%d failed conversations, want more than two pages", len(failed))
	}
	secret := f.user("ada", auth.Admin)
	run(t, ctx, "login", f.loginSteps("ada", secret))
	// page waits until the list shows rows, first to last, and nothing
	// after them.
	page := func(what string, rows []threadListRow) {
		t.Helper()
		n := len(rows)
		run(t, ctx, what, chromedp.Steps(
			chromedp.WaitVisible(css(`#feed li:first-child[data-conversation="`+rows[0].ID+`"]`)),
			chromedp.WaitVisible(css(`#feed li:nth-child(`+strconv.Itoa(n)+`)[data-conversation="`+rows[n-1].ID+`"]`)),
			chromedp.WaitNotPresent(css(`#feed li:nth-child(`+strconv.Itoa(n+1)+`)`)),
		))
	}
	page("the newest conversations", all[:30])
	run(t, ctx, "no newer ones", chromedp.WaitNotVisible(css("#newer-button")))
	run(t, ctx, "older", chromedp.Click(css("#older-button")))
	page("the next older ones", all[30:60])
	run(t, ctx, "older again", chromedp.Click(css("#older-button")))
	page("older still", all[60:90])
	run(t, ctx, "newer", chromedp.Click(css("#newer-button")))
	page("back one step", all[30:60])

	run(t, ctx, "failed only", chromedp.Click(css("#failed-only")))
	page("the newest failed conversations", failed[:30])
	run(t, ctx, "no newer failed ones", chromedp.WaitNotVisible(css("#newer-button")))
	if n := run(t, ctx, "statuses", chromedp.Evaluate[int](`document.querySelectorAll("#feed li .status-error").length`)); n != 30 {
		t.Errorf("%d of 30 listed conversations show status error", n)
	}
	run(t, ctx, "older failed", chromedp.Click(css("#older-button")))
	page("older failed conversations", failed[30:60])

	f.restart(func() {
		run(t, ctx, "the organism goes", chromedp.WaitVisible(css(`#who[data-outage="unreachable"]`)))
		who := textOf(t, ctx, "header", css("#who"))
		if !strings.Contains(who, "organism unreachable") || !strings.Contains(who, "retrying") ||
			strings.Contains(who, "Failed to fetch") {
			t.Errorf("the header reads %q during the outage, want that the organism is unreachable and retried", who)
		}
		page("the list drawn before the outage", failed[30:60])
	})
	run(t, ctx, "the organism is back", chromedp.WaitNotPresent(css(`#who[data-outage]`)))
	page("the same page after the outage", failed[30:60])
}
