package bus

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// TestDashboardReconnects restarts the bus under an open dashboard: its
// sockets open again by themselves, so the send box works on, and once its
// session ends it returns to the login form saying so instead of polling
// with a dead token.
func TestDashboardReconnects(t *testing.T) {
	f := newFixture(t)
	ctx := browser(t)
	secret := f.user("ada", auth.Admin)
	connected := css(`#connection[data-state="connected"]`)
	run(t, ctx, "login", chromedp.Steps(f.loginSteps("ada", secret), chromedp.WaitVisible(connected)))

	f.restart(func() {
		run(t, ctx, "the dashboard sees the bus go", chromedp.WaitVisible(css(`#connection[data-state="reconnecting"]`)))
		// A message typed meanwhile is refused in plain sight, not dropped.
		run(t, ctx, "send while down", chromedp.Steps(
			chromedp.SendKeys(css("#send-input"), "@greeter Ann"),
			chromedp.Click(css("#send-button")),
			chromedp.WaitVisible(css("#send-status.error")),
		))
	})
	run(t, ctx, "reconnect and send", chromedp.Steps(
		chromedp.WaitVisible(connected),
		chromedp.SetValue(css("#send-input"), "@greeter Dan"),
		chromedp.Click(css("#send-button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	sent := run(t, ctx, "sent thread", chromedp.AttributeValue(css("#send-status"), "data-thread")).Value
	run(t, ctx, "the conversation", chromedp.WaitVisible(css(`#feed li[data-conversation="`+sent+`"]`)))

	token := run(t, ctx, "token", chromedp.Evaluate[string](`state.token`))
	if code, body, _ := f.do(http.MethodPost, "/auth/logout", token, nil); code != http.StatusOK {
		t.Fatalf("logout: %d %v", code, body)
	}
	run(t, ctx, "back to the login form", chromedp.WaitVisible(css("#login")))
	if why := textOf(t, ctx, "why", css("#login-error")); !strings.Contains(why, "session has ended") {
		t.Errorf("the login form says %q, want that the session has ended", why)
	}
	if main := run(t, ctx, "main", chromedp.Evaluate[bool](`document.querySelector("#main").hidden`)); !main {
		t.Error("the dashboard still shows the organism after its session ended")
	}
}
