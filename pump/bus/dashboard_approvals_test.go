package bus

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardKeepsADenialReason: an operator typing why they deny a
// held call keeps what they typed, and their place in the field, when
// another call begins waiting meanwhile (the list of approvals is drawn
// anew): on a busy organism the reason was wiped mid-sentence.
func TestDashboardKeepsADenialReason(t *testing.T) {
	f := newFixtureWith(t, heldHello(t))
	ctx := browser(t)
	ada := f.loginAs("ada", auth.Admin)
	f.inject(ada, "greeter", map[string]string{"name": "Kim"})
	secret := f.user("olga", auth.Operator)
	reason := `#approvals li:first-child input.deny-reason`
	run(t, ctx, "olga types a reason", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css(reason)),
		chromedp.SendKeys(css(reason), "not on a Sunday"),
	))
	typed := run(t, ctx, "the approval typed in", chromedp.Evaluate[string](`document.querySelector("#approvals li").dataset.approval`))
	f.inject(ada, "greeter", map[string]string{"name": "Lee"})
	run(t, ctx, "the second approval", chromedp.WaitVisible(css(`#approvals li:nth-child(2)`)))
	type field struct{ ID, Reason, Focused string }
	got := run(t, ctx, "the reasons", chromedp.Evaluate[[]field](`[...document.querySelectorAll("#approvals li")].map((li) => {
		const i = li.querySelector("input.deny-reason");
		return {ID: li.dataset.approval, Reason: i.value, Focused: document.activeElement === i ? "yes" : ""};
	})`))
	var other string
	for _, a := range got {
		if a.ID != typed {
			other = a.ID
		}
	}
	want := map[string]field{typed: {typed, "not on a Sunday", "yes"}, other: {other, "", ""}}
	byID := map[string]field{}
	for _, a := range got {
		byID[a.ID] = a
	}
	if len(got) != 2 || other == "" {
		t.Fatalf("want two approvals, got %+v", got)
	}
	if diff := cmp.Diff(want, byID); diff != "" {
		t.Errorf("denial reasons after a second approval (-want +got):\n%s", diff)
	}
}

// TestDashboardSaysWhenAnApprovalTimesOut: a call waiting for a human
// says when it stops waiting (the approval's expires_at, by the page's
// clock) — after that it is refused, "approval timed out" — so an
// operator knows how long they have to decide it.
func TestDashboardSaysWhenAnApprovalTimesOut(t *testing.T) {
	f := newFixtureWith(t, heldHello(t))
	ctx := browser(t)
	ada := f.loginAs("ada", auth.Admin)
	f.inject(ada, "greeter", map[string]string{"name": "Kim"})
	secret := f.user("olga", auth.Operator)
	run(t, ctx, "the approval", chromedp.Steps(
		f.loginSteps("olga", secret),
		chromedp.WaitVisible(css(`#approvals li`)),
	))
	id := run(t, ctx, "its id", chromedp.Evaluate[string](`document.querySelector("#approvals li").dataset.approval`))
	status, body, _ := f.do("GET", "/api/v1/approvals/"+id, ada, nil)
	expires, _ := body["expires_at"].(string)
	if status != 200 || expires == "" {
		t.Fatalf("GET the approval: %d %v", status, body)
	}
	want := run(t, ctx, "the time", chromedp.Evaluate[string](
		`"times out at " + new Date(`+strconv.Quote(expires)+`).toTimeString().slice(0, 8) + " unless decided"`))
	if got := textOf(t, ctx, "expiry", css(`#approvals li .expires`)); got != want {
		t.Errorf("the approval says %q, want %q", got, want)
	}
}
