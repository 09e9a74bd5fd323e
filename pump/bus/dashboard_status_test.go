package bus

import (
	"net/http"
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
		if got := run(t, ctx, "status text", chromedp.Text(row(conv, want))); got != want {
			t.Errorf("feed row of %s reads %q, want %q", conv, got, want)
		}
	}
}
