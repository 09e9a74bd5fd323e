package bus

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardInsecureDevNeedsNoLogin: under --insecure-dev the server
// authenticates no one, so the dashboard does not ask for a login it would
// not check: it opens on the organism, says it is in insecure dev mode, and
// works (the graph draws, a message is sent).
func TestDashboardInsecureDevNeedsNoLogin(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Insecure = true })
	ctx := browser(t)
	run(t, ctx, "open, graph, send", chromedp.Steps(
		chromedp.Navigate(f.base+"/"),
		chromedp.WaitVisible(css("#main")),
		chromedp.WaitVisible(css(`#graph g[data-name="greeter"] circle`)),
		chromedp.SendKeys(css("#send-input"), "@greeter Dan"),
		chromedp.Click(css("#send-form button")),
		chromedp.WaitVisible(css("#send-status[data-thread]")),
	))
	if hidden := run(t, ctx, "login form", chromedp.Evaluate[bool](`document.querySelector("#login").hidden`)); !hidden {
		t.Error("the login form shows under --insecure-dev, where any name logs in")
	}
	if who := run(t, ctx, "who", chromedp.Text(css("#who"))); !strings.Contains(who, "insecure dev mode") {
		t.Errorf("#who = %q, want it to say insecure dev mode", who)
	}
}
