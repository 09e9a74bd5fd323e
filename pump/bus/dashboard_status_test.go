package bus

import (
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardShowsDeniedAndCancelled: in the dashboard's feed, a
// conversation whose call an operator denied reads denied, and one whose
// answer was cancelled reads cancelled — neither reads error.
func TestDashboardShowsDeniedAndCancelled(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "I was not allowed.",
		"<RunCommand><Command>date</Command></RunCommand>")
	f := newFixtureWith(t, governedOrganism(t, m))
	ctx := browser(t)
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Operator])
	readUntil(t, ws, "connected")

	denied := sendOver(t, ws, "researcher", "what day is it?")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator],
		map[string]string{"decision": "deny", "reason": "not now"}); status != http.StatusOK {
		t.Fatalf("deny: %d %v", status, body)
	}
	readUntil(t, ws, "complete")

	cancelled := sendOver(t, ws, "researcher", "and now?")
	readUntil(t, ws, "approval") // in flight: its call waits for a human
	if status, body, _ := f.do("POST", "/api/v1/threads/"+cancelled+"/cancel", tok[auth.Operator], nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	readUntil(t, ws, "complete")
	f.waitJournal()

	adminSecret := f.user("ada", auth.Admin)
	row := func(conv, status string) css {
		return css(`#feed li[data-conversation="` + conv + `"] .status-` + status)
	}
	run(t, ctx, "the feed's statuses", chromedp.Steps(
		f.loginSteps("ada", adminSecret),
		chromedp.WaitVisible(row(denied, "denied")),
		chromedp.WaitVisible(row(cancelled, "cancelled")),
	))
	for conv, want := range map[string]string{denied: "denied", cancelled: "cancelled"} {
		if got := textOf(t, ctx, "status text", row(conv, want)); got != want {
			t.Errorf("feed row of %s reads %q, want %q", conv, got, want)
		}
	}
}

// TestDashboardDrawsDecisionsNotFailures: in the open conversation, the
// refusal a denied approval answered with, the dead letter of a cancel and
// a refusal by the constitution's deny rule are decisions — the API says
// which (outcome denied, cancelled) and the dashboard draws them as
// decisions (amber), not failures (red).
func TestDashboardDrawsDecisionsNotFailures(t *testing.T) {
	m := newLoopModel(t, "<RunCommand><Command>date</Command></RunCommand>", "I was not allowed.",
		"<RunCommand><Command>date</Command></RunCommand>")
	f := newFixtureWith(t, governedOrganism(t, m))
	ctx := browser(t)
	tok := f.tokens()
	ws := f.dial("/ws", tok[auth.Operator])
	readUntil(t, ws, "connected")

	denied := sendOver(t, ws, "researcher", "what day is it?")
	id := readUntil(t, ws, "approval")["approval"].(map[string]any)["id"].(string)
	if status, body, _ := f.do("POST", "/api/v1/approvals/"+id, tok[auth.Operator],
		map[string]string{"decision": "deny", "reason": "not now"}); status != http.StatusOK {
		t.Fatalf("deny: %d %v", status, body)
	}
	readUntil(t, ws, "complete")
	cancelled := sendOver(t, ws, "researcher", "and now?")
	readUntil(t, ws, "approval")
	if status, body, _ := f.do("POST", "/api/v1/threads/"+cancelled+"/cancel", tok[auth.Operator], nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	readUntil(t, ws, "complete")
	refused := sendOver(t, ws, "researcher", "please rm -rf /")
	readUntil(t, ws, "reply")
	f.waitJournal()

	// The API: which non-message entries record an operator's decision.
	cases := []struct {
		conv, kind, outcome string
	}{
		{denied, "refusal", "denied"},
		{cancelled, "dead-letter", "cancelled"},
		{refused, "refusal", "denied"},
	}
	for _, c := range cases {
		status, body, _ := f.do("GET", "/api/v1/threads/"+c.conv+"/messages?scope=conversation&limit=200", tok[auth.Viewer], nil)
		if status != http.StatusOK {
			t.Fatalf("messages of %s: %d %v", c.conv, status, body)
		}
		var got []string
		for _, row := range body["messages"].([]any) {
			msg := row.(map[string]any)
			if msg["kind"] == c.kind {
				outcome, _ := msg["outcome"].(string)
				got = append(got, outcome)
			}
		}
		if len(got) == 0 || slices.ContainsFunc(got, func(o string) bool { return o != c.outcome }) {
			t.Errorf("conversation %s: the %s entries' outcomes are %q, want each %q", c.conv, c.kind, got, c.outcome)
		}
	}

	// The dashboard: decisions amber.
	adminSecret := f.user("ada", auth.Admin)
	run(t, ctx, "login", chromedp.Steps(f.loginSteps("ada", adminSecret),
		chromedp.WaitVisible(css(`#feed li[data-conversation="`+refused+`"]`))))
	for _, c := range cases {
		entry := `#envelopes li[data-kind="` + c.kind + `"]`
		run(t, ctx, "open "+c.conv, chromedp.Steps(
			chromedp.Click(css(`#feed li[data-conversation="`+c.conv+`"]`)),
			chromedp.WaitVisible(css(entry)),
		))
		classes := run(t, ctx, "the entries' classes", chromedp.Evaluate[[]string](
			`state.selected === "`+c.conv+`" ? Array.from(document.querySelectorAll('`+entry+`')).map((li) => li.className) : ["not open"]`))
		const want = "envelope decision"
		for _, got := range classes {
			if got != want {
				t.Errorf("conversation %s: a %s entry is drawn %q, want %q", c.conv, c.kind, got, want)
			}
		}
	}
}
