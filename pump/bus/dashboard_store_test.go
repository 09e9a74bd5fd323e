package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardSaysTheStoreFails: while /api/v1/organism reports the
// store failing (a full disk), the dashboard says so under the
// organism's status — since when, why, and that messages are refused —
// and the alert goes away once the store is ok again.
func TestDashboardSaysTheStoreFails(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Operator)
	run(t, ctx, "the dashboard", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(css("#org-status")),
	))
	if visible := run(t, ctx, "the alert of a healthy store", chromedp.Evaluate[bool](`!document.querySelector("#store-alert").hidden`)); visible {
		t.Error("a store alert is shown while the store is ok")
	}
	// What readState draws from /api/v1/organism's "store". The healthy
	// organism's reads go on (a tick already under way, or one an event
	// begins), so readState's own drawStore is set aside first: a read
	// ending after this draw would hide the alert again.
	run(t, ctx, "draw a failing store", chromedp.Evaluate[bool](`clearInterval(state.ticker), window.drawStoreAsIs = drawStore,
		drawStore = () => {}, drawStoreAsIs({state: "failing", error: "store: commit: database or disk is full (13)",
		since: "2026-11-29T14:41:33Z", held_writes: 7}), true`))
	run(t, ctx, "the alert", chromedp.WaitVisible(css("#store-alert")))
	got := textOf(t, ctx, "the alert", css("#store-alert"))
	for _, want := range []string{"2026-11-29T14:41:33Z", "database or disk is full", "refused", "7"} {
		if !strings.Contains(got, want) {
			t.Errorf("store alert %q lacks %q", got, want)
		}
	}
	run(t, ctx, "draw the store ok again", chromedp.Evaluate[bool](`drawStoreAsIs({state: "ok"}), true`))
	if visible := run(t, ctx, "the alert once ok", chromedp.Evaluate[bool](`!document.querySelector("#store-alert").hidden`)); visible {
		t.Error("the store alert stays once the store is ok again")
	}
}
