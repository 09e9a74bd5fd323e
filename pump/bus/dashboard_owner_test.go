package bus

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardOffersStopsByOwner: the conversation list names who began
// each conversation (the API's owner), viewers included, and an operator
// is offered cancel and kill on the conversations the server says it
// owns — also when the row shown is an inner thread whose first
// participant is a listener, not the operator's session — and on no one
// else's, whatever its participants read.
func TestDashboardOffersStopsByOwner(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	ada := f.loginAs("ada", auth.Admin)
	secret := f.user("olga", auth.Operator)
	olga := f.login("olga", secret)
	// shouter paused: the greeting waits for it, the conversation stays active.
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause shouter: %d %v", status, body)
	}
	conv := f.inject(olga, "greeter", map[string]string{"name": "Kim"})
	row := `#feed li[data-conversation="` + conv + `"]`

	vsecret := f.user("vic", auth.Viewer)
	vctx, cancel := chromedp.NewContext(ctx)
	defer cancel()
	run(t, vctx, "viewer login", chromedp.Steps(f.loginSteps("vic", vsecret), chromedp.WaitVisible(css(row+" .owner"))))
	if got := textOf(t, vctx, "the owner shown", css(row+" .owner")); got != "by olga" {
		t.Errorf("the viewer's row names its owner %q, want %q", got, "by olga")
	}
	cancel()

	run(t, ctx, "operator login", chromedp.Steps(f.loginSteps("olga", secret),
		chromedp.WaitVisible(css(row+` button[data-stop="kill"]`))))
	// Rows as the API could list them: olga's conversation shown by an
	// inner thread (a listener sends first), and another's conversation
	// whose participants name olga's session.
	got := run(t, ctx, "buttons by row", chromedp.Evaluate[map[string]int](`(() => {
		state.drawn = {};
		drawFeed([
			{id: "inner", conversation: "mine", status: "active", owner: "olga", participants: ["greeter", "shouter"], created_at: ""},
			{id: "theirs", conversation: "theirs", status: "active", owner: "bob", participants: ["api:olga", "greeter"], created_at: ""},
			{id: "nobody", conversation: "nobody", status: "active", owner: "", participants: ["console:olga", "greeter"], created_at: ""}]);
		const out = {};
		for (const li of document.querySelectorAll("#feed li")) out[li.dataset.conversation] = li.querySelectorAll("button").length;
		return out;
	})()`))
	if diff := cmp.Diff(map[string]int{"mine": 2, "theirs": 0, "nobody": 0}, got); diff != "" {
		t.Errorf("cancel and kill buttons by conversation for olga (-want +got):\n%s", diff)
	}
}
