package bus

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// listedThreads is more threads than the dashboard's conversation list
// reads (its ?limit=30): as many newer threads push an older conversation
// off the list.
const listedThreads = 31

// TestDashboardFollowsAnOldOpenConversation: the open conversation shows
// what is journaled of it while it runs, also when more than a page of
// newer threads keeps it off the conversation list — here a call of it
// approved (with nothing completing, so no event tells) while a busy
// organism runs others.
func TestDashboardFollowsAnOldOpenConversation(t *testing.T) {
	f := newFixtureWith(t, heldHello(t))
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	ada := f.login("ada", secret)
	done := f.watchCompletions()
	others := func() {
		t.Helper()
		var last string
		for range listedThreads {
			last = f.inject(ada, "response-handler", map[string]string{"message": "HI"})
		}
		done.wait(t, last)
		f.waitJournal()
	}
	decisions := func() int {
		return run(t, ctx, "decisions shown", chromedp.Evaluate[int](
			`document.querySelectorAll('#envelopes li[data-kind="decision"]').length`))
	}

	// The conversation waits for approval: its call to shouter is held.
	conv := f.inject(ada, "greeter", map[string]string{"name": "Old"})
	row := css(`#feed li[data-conversation="` + conv + `"]`)
	run(t, ctx, "open the conversation", chromedp.Steps(
		f.loginSteps("ada", secret),
		chromedp.WaitVisible(css("#approvals li")),
		chromedp.Click(row),
		chromedp.WaitVisible(css(`#envelopes li[data-kind="decision"]`)),
	))
	held := decisions()

	// Newer conversations push it off the list.
	others()
	run(t, ctx, "the conversation off the list", chromedp.WaitNotPresent(row))

	// Meanwhile (the dashboard does not poll) its call is approved, shouter
	// paused so that it goes on, and more conversations begin.
	run(t, ctx, "stop polling", chromedp.Evaluate[bool](`(() => {
		clearInterval(state.ticker); window.pollOnce = tick; tick = () => {}; return true; })()`))
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != http.StatusOK {
		t.Fatalf("pause shouter: %d %v", status, body)
	}
	id := run(t, ctx, "approval id", chromedp.AttributeValue(css("#approvals li"), "data-approval")).Value
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, ada, map[string]string{"decision": "approve"}); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, body)
	}
	others()
	run(t, ctx, "poll again", chromedp.Evaluate[bool](`(() => {
		tick = pollOnce; state.ticker = setInterval(tick, 1000); tick(); return true; })()`))

	for deadline := time.Now().Add(stepTimeout); decisions() <= held; {
		if time.Now().After(deadline) {
			t.Fatalf("the open conversation still shows %d decisions, not the approval journaled since", held)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := run(t, ctx, "open conversation", chromedp.Evaluate[string](`state.selected`)); got != conv {
		t.Errorf("the open conversation is %q, want %q", got, conv)
	}
}
